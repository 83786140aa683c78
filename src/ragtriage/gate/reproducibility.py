"""Can the candidate's figures be reproduced, and was the gate fixed before the candidate was seen?

Checks what the store recorded about the candidate run: the dataset version the run says it was built for, the
corpus snapshot, its configuration, the raw ranked results (with the loaded file's sha256) and the evaluator
version that loaded them; and whether the gate file was modified after the run was loaded, which would let a
gate be tuned to the candidate it judges.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from ragtriage.gate.config import GateConfig
from ragtriage.gate.outcome import RuleResult
from ragtriage.gate.sources import first_row
from ragtriage.store.run_rules import has_run_json as run_json_sql

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


def _problems(con: duckdb.DuckDBPyConnection, config: GateConfig, run_id: str) -> dict[str, str]:
    row = first_row(con, _FACTS_SQL, [run_id])
    assert row is not None
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


RUN_JSON_ITEMS = ("dataset_version", "corpus_snapshot", "configuration")
"""What only a run.json can record: a plain TREC (or BEIR, JSON) run cannot carry them."""


def has_run_json(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the run came with a run.json (a contract folder, or a TREC file beside one)."""
    row = first_row(con, _FACTS_SQL, [run_id])
    return bool(row and row[-1])


def required_items(con: duckdb.DuckDBPyConnection, config: GateConfig, run_id: str) -> tuple[str, ...]:
    """The reproducibility items the gate holds ``run_id`` to: every item the gate file's ``[reproducibility]``
    asks for; without that table, those the run's inputs can record (a run without run.json cannot record a
    dataset version, a corpus snapshot or a configuration, so they are noted as not recorded, not failed)."""
    if config.reproducibility_asked or has_run_json(con, run_id):
        return config.reproducibility
    return tuple(k for k in config.reproducibility if k not in RUN_JSON_ITEMS)


def reproducibility_rule(con: duckdb.DuckDBPyConnection, config: GateConfig, run_id: str, evaluator: str) -> RuleResult:
    problems = _problems(con, config, run_id)
    required = required_items(con, config, run_id)
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
    row = first_row(
        con, "SELECT string_agg(DISTINCT ragtriage_version, ',') FROM loads WHERE kind = 'run' AND target = ?", [run_id]
    )
    notes = list(ignored)
    if row and row[0] and row[0] != evaluator:
        notes.append(f"run loaded by ragtriage {row[0]}, evaluated by {evaluator}")
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
