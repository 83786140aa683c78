"""Evaluating a gate file against a candidate and a baseline, and keeping the verdict in the store.

The verdict row carries the gate file's sha256 and mtime next to the result, so a later reader can tell which
gate (byte for byte) passed or failed which run, and whether the gate was edited after the run was loaded.

Can the candidate's figures be reproduced, and was the gate fixed before the candidate was seen? The
reproducibility rule (:func:`reproducibility_rule`) checks what the store recorded about the candidate run: the
dataset version the run says it was built for, the corpus snapshot, its configuration, the raw ranked results
(with the loaded file's sha256) and the evaluator version that loaded them; and whether the gate file was modified
after the run was loaded, which would let a gate be tuned to the candidate it judges.
"""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.gate import sources
from ragtriage.gate.config import GateConfig, for_data
from ragtriage.gate.outcome import RuleResult, Verdict, json_pieces
from ragtriage.gate.rules import Context, leakage_not_applicable, relevance_rules
from ragtriage.store import run_k
from ragtriage.store.run_rules import has_run_json as run_json_sql
from ragtriage.version import __version__

VERDICTS_DDL = """
CREATE TABLE IF NOT EXISTS gate_verdicts (
    verdict_id INTEGER NOT NULL,
    run_id VARCHAR NOT NULL,
    baseline VARCHAR NOT NULL,
    dataset_version VARCHAR NOT NULL,
    gate_name VARCHAR NOT NULL,
    gate_path VARCHAR NOT NULL,
    gate_sha256 VARCHAR NOT NULL,
    gate_mtime TIMESTAMP NOT NULL,
    evaluated_at TIMESTAMP NOT NULL,
    evaluator_version VARCHAR NOT NULL,
    passed BOOLEAN NOT NULL,
    n_rules INTEGER NOT NULL,
    n_failed INTEGER NOT NULL,
    report JSON NOT NULL
)"""


_FACTS_SQL = f"""
SELECT r.declared_dataset_version, r.corpus_version, d.corpus_snapshot,
       r.system, r.index_version, r.embedding_model, r.chunking, r.reranker, r.loaded_at,
       (SELECT count(*) FROM results WHERE run_id = r.run_id) AS n_results,
       (SELECT string_agg(DISTINCT sha256, ',') FROM loads WHERE kind = 'run' AND target = r.run_id) AS sha256,
       (SELECT string_agg(DISTINCT ragtriage_version, ',') FROM loads WHERE kind = 'run' AND target = r.run_id)
           AS loaded_by,
       {run_json_sql("r")} AS has_run_json
FROM runs r LEFT JOIN datasets d USING (dataset_version) WHERE r.run_id = ?
"""


def _configuration(system: str | None, *fields: str | None) -> bool:
    has_system = bool(system) and json.loads(system) not in (None, {}, [])  # type: ignore[arg-type]
    return has_system or any(fields)


RUN_JSON_ITEMS = ("dataset_version", "corpus_snapshot", "configuration")
"""What only a run.json can record: a plain TREC (or BEIR, JSON) run cannot carry them."""


def _problems(config: GateConfig, row: tuple[Any, ...]) -> dict[str, str]:
    """What the run's recorded facts (a row of ``_FACTS_SQL``) leave unreproducible, per item."""
    declared, corpus, snapshot, system, index, emb, chunking, reranker, loaded_at, n_results, sha, by, _ = row
    out: dict[str, str] = {}
    if not declared:
        out["dataset_version"] = "run.json records no dataset_version"
    if not corpus:
        out["corpus_snapshot"] = "run.json records no corpus_version"
    elif snapshot and corpus != snapshot:
        out["corpus_snapshot"] = f"run used corpus {corpus!r} but the dataset's snapshot is {snapshot!r}"
    if not _configuration(system, index, emb, chunking, reranker):
        out["configuration"] = "run.json records no system, index_version, embedding_model, chunking or reranker"
    if not n_results or not sha:
        out["raw_results"] = "no ranked results with a file hash recorded for the run"
    if not by:
        out["evaluator_version"] = "no evaluator version recorded with the run's load"
    if isinstance(loaded_at, datetime) and config.mtime > loaded_at:
        out["gate_file_predates_run"] = (
            f"gate file modified {config.mtime:%Y-%m-%d %H:%M:%S} UTC, after the run "
            f"was loaded {loaded_at:%Y-%m-%d %H:%M:%S} UTC"
        )
    return out


def reproducibility_rule(con: duckdb.DuckDBPyConnection, config: GateConfig, run_id: str, evaluator: str) -> RuleResult:
    """The run held to every item the gate file's ``[reproducibility]`` asks for; without that table, to those the
    run's inputs can record (a run without run.json cannot record a dataset version, a corpus snapshot or a
    configuration, so they are noted as not recorded, not failed)."""
    row = sources.first_row(con, _FACTS_SQL, [run_id])
    assert row is not None
    problems = _problems(config, row)
    loaded_by, has_run_json = row[-2], row[-1]
    if config.reproducibility_asked or has_run_json:
        required = config.reproducibility
    else:
        required = tuple(k for k in config.reproducibility if k not in RUN_JSON_ITEMS)
    failed = [k for k in required if k in problems]
    unrecordable = [k for k in config.reproducibility if k not in required and k in problems]
    ignored = [f"not required: {k}: {problems[k]}" for k in problems if k not in config.reproducibility]
    if unrecordable:
        ignored.insert(
            0,
            f"not recorded (the run has no run.json; require them in [reproducibility] to fail on them): "
            f"{', '.join(unrecordable)}",
        )
    figure = "all recorded" if not failed else "; ".join(f"{k}: {problems[k]}" for k in failed)
    notes = list(ignored)
    if loaded_by and loaded_by != evaluator:
        notes.append(f"run loaded by ragtriage {loaded_by}, evaluated by {evaluator}")
    return RuleResult(
        "reproducibility",
        "reproducibility",
        not failed,
        figure,
        "recorded: " + (", ".join(required) or "nothing required"),
        float(len(failed)),
        (),
        tuple(notes),
        applies=config.reproducibility_asked,
    )


def evaluate_gate(con: duckdb.DuckDBPyConnection, config: GateConfig, run_id: str, baseline: str) -> Verdict:
    """Run every rule of ``config`` on ``run_id`` against ``baseline``; raises StoreError for unusable input."""
    version = sources.paired_version(con, run_id, baseline)
    ks = config.ks()
    own_k = run_k(con, run_id)
    tables = {k: sources.defect_categories(con, run_id, k) for k in sorted({*ks, own_k})}
    at = {k: _categories(t) for k, t in tables.items()}
    classified = _categories(tables[own_k], basis="classified failure")
    del tables
    costs = sources.category_costs(con, run_id)
    pair = (run_id, baseline)
    candidate, base = sources.side_by_side(lambda cur, rid: sources.per_case(cur, rid, ks), con, pair)
    base_rows = sources.leak_summary(con, baseline)[0]
    base_clean = sources.per_case(con, baseline, ks, sources.leaks(con, baseline)) if base_rows else None
    report_slices = sources.case_slices(con, version, config.report_by)
    config = for_data(config, has_splits=report_slices.column("split").null_count < report_slices.num_rows)
    ctx = Context(
        con=con,
        config=config,
        run_id=run_id,
        baseline=baseline,
        dataset_version=version,
        candidate=candidate,
        base=base,
        report_slices=report_slices,
        categories=at[own_k],
        run_k=own_k,
        categories_at=at,
        classified=classified,
        base_clean=base_clean,
        base_leaked_rows=base_rows,
    )
    rules = relevance_rules(ctx)
    rules.append(reproducibility_rule(con, config, run_id, __version__))
    if not any(r.applies for r in rules):
        raise NothingApplies(config, rules)
    notes = baseline_notes(base_rows, baseline)
    return Verdict(
        gate_name=config.name,
        gate_path=str(config.path),
        gate_sha256=config.sha256,
        gate_mtime=config.mtime,
        run_id=run_id,
        baseline=baseline,
        dataset_version=version,
        evaluator_version=__version__,
        evaluated_at=datetime.now(UTC).replace(tzinfo=None),
        rules=tuple(rules),
        notes=notes,
        category_costs=tuple(
            {"category": c.category, "cost": c.cost, "cases": c.cases, "measure": costs.measure} for c in costs.costs
        ),
        cost_summary=costs.sentence(),
    )


def refuse_if_nothing_applies(con: duckdb.DuckDBPyConnection, config: GateConfig, run_ids: list[str]) -> None:
    """Raise :class:`NothingApplies` before anything is classified or written when the gate holds only the built-in
    leakage and reproducibility rules, the data declares no access rule and no run has anything to require: a
    refused gate leaves the store as it was. Gates with rules of their own are judged by :func:`evaluate_gate`."""
    from ragtriage.checks.leakage import DECLARED_SQL

    if config.has_own_rules():
        return
    ((declared, cases),) = con.execute(f"SELECT {DECLARED_SQL}, (SELECT count(*) FROM cases)").fetchall()
    if declared:
        return
    repro = [reproducibility_rule(con, config, r, __version__) for r in run_ids]
    if any(r.applies for r in repro):
        return
    raise NothingApplies(config, [leakage_not_applicable(int(cases)), *repro])


def baseline_notes(rows: int, baseline: str) -> tuple[str, ...]:
    """What every report says before its rules when the baseline leaks: its figures were bought in part with
    documents its principals may not see, a bar the candidate must not reach that way, so the regression rules
    compare against its figures with the leaked rows earning nothing, and show both."""
    if not rows:
        return ()
    return (
        f"baseline {baseline} LEAKS: {rows:,} leaked result row(s), any stage; the regression rules below compare "
        "against its figures with the leaked final rows removed (both figures shown)",
    )


class NothingApplies(ValueError):
    """A gate file none of whose rules the data can carry: its verdict would pass (or fail) on nothing measured,
    so it is refused as unusable input (exit 2), naming each rule and why it does not apply."""

    def __init__(self, config: GateConfig, rules: list[RuleResult]) -> None:
        why = "; ".join(f"{r.rule}: {r.figure}" for r in rules)
        super().__init__(
            f"{config.path}: no rule of the gate applies to this data ({why}). Add a rule the data can carry, "
            'e.g. [[regression]] metric = "nDCG@10", or a [reproducibility] table to require what was recorded'
        )


def _categories(table: pa.Table, basis: str | None = None) -> dict[str, str]:
    """case_id -> category of the rows with a category (of ``basis`` when asked and the table says), read column by
    column: a row dict per case of a large run would be held beside the two columns kept."""
    category = table.column("category")
    kept = pc.fill_null(pc.not_equal(category, ""), False)
    if basis is not None and "basis" in table.column_names:
        kept = pc.and_(kept, pc.fill_null(pc.equal(table.column("basis"), basis), False))
    rows = table.filter(kept)
    return dict(zip(rows.column("case_id").to_pylist(), rows.column("category").to_pylist(), strict=True))


def record_verdict(con: duckdb.DuckDBPyConnection, verdict: Verdict) -> int:
    """Append the verdict to ``gate_verdicts`` (created on first use); returns its verdict_id."""
    con.execute(VERDICTS_DDL)
    row = sources.first_row(con, "SELECT coalesce(max(verdict_id), 0) + 1 FROM gate_verdicts", [])
    assert row is not None
    verdict_id = int(row[0])
    with tempfile.TemporaryDirectory(prefix="ragtriage-verdict-") as folder:
        report = Path(folder) / "report.json"
        with report.open("w", encoding="utf-8") as out:  # streamed: the document is never one Python string
            for piece in json_pieces(verdict.parts(), indent=None, ensure_ascii=True):
                out.write(piece)
        _insert(con, verdict, verdict_id, report)
    return verdict_id


def _insert(con: duckdb.DuckDBPyConnection, verdict: Verdict, verdict_id: int, report: Path) -> None:
    """The verdict's row, its report read by DuckDB from ``report`` (what ``json.dumps(to_dict())`` writes)."""
    failed = sum(not r.passed for r in verdict.rules)
    con.execute(
        "INSERT INTO gate_verdicts SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(content AS JSON) "
        "FROM read_text(?)",
        [
            verdict_id,
            verdict.run_id,
            verdict.baseline,
            verdict.dataset_version,
            verdict.gate_name,
            verdict.gate_path,
            verdict.gate_sha256,
            verdict.gate_mtime,
            verdict.evaluated_at,
            verdict.evaluator_version,
            verdict.passed,
            len(verdict.rules),
            failed,
            str(report),
        ],
    )
