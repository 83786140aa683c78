"""Writing staged datasets and runs into the store, inside the one transaction ``store.byo.load_inputs`` opens.

A load stages every file into typed temp tables, checks every rule, and only then writes; any error rolls the
whole transaction back, so the database is exactly as it was. Warnings (ingestion and dataset signals) are kept
in ``load_warnings`` and counted by ``ragtriage info``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.digest import sha256_of
from ragtriage.contract.errors import Finding, ValidationFailed, errors_of, has_errors, unreadable
from ragtriage.contract.field_rules import control_message
from ragtriage.contract.manifest import DatasetManifest
from ragtriage.contract.rules import apply_rules
from ragtriage.contract.staging import Staged, sql_str
from ragtriage.contract.trec import RunFacts
from ragtriage.safe_text import has_controls
from ragtriage.store.connection import DEFAULT_K_SOURCE, DEFAULT_RUN_K, current_dataset_version, set_current_dataset
from ragtriage.store.corpus_manifest import forget_derived, keeps_derived
from ragtriage.store.dataset_rules import dataset_findings, document_unit, label_unit, span_rules, split_span_ids
from ragtriage.store.run_rules import pre_write_rules, run_findings
from ragtriage.store.versioning import dataset_hash, relation_digest
from ragtriage.version import __version__

Progress = Callable[[str], None]


@dataclass
class LoadReport:
    kind: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)
    warnings: list[Finding] = field(default_factory=list)
    unchanged: bool = False
    fmt: str = ""  # run: folder | trec | msmarco | json | frame | jsonl | csv | tsv | parquet
    source: str = ""  # the path (or "<run dict>", "<run pandas DataFrame>") it came from
    ignored_topics: int = 0  # run topics that are not cases, left out as trec_eval leaves them out
    ignored_rows: int = 0
    score_from_rank: bool = False  # MS MARCO / rank-only input: score = 1 / rank
    extra_column_lines: int = 0  # TREC lines with columns after the tag (ignored)
    tags: dict[str, int] = field(default_factory=dict)  # TREC tags and their line counts
    extra_notes: list[str] = field(default_factory=list)  # facts a reader adds (how trace spans became cases)
    look_alikes: str = ""  # ignored topics that differ from a case only by white space or letter case
    renamed: str = ""  # why the run is named after its file rather than its TREC tag

    def notes(self) -> list[str]:
        """The load-side facts a report prints beside its figures, as sentences."""
        out = [self.renamed] if self.renamed else []
        if self.score_from_rank:
            out.append("the run file has no scores: score = 1 / rank, so the file's rank order is the ranking")
        if self.ignored_topics:
            out.append(
                f"{self.ignored_topics:,} run topic(s) not in the dataset were ignored "
                f"({self.ignored_rows:,} rows), as trec_eval ignores them{self.look_alikes}"
            )
        if self.extra_column_lines:
            out.append(f"{self.extra_column_lines:,} line(s) had columns after the TREC tag; they were ignored")
        if len(self.tags) > 1:
            out.append(f"the file holds {len(self.tags)} run tags, loaded as one run")
        return out + self.extra_notes


def noop(_: str) -> None:
    return None


def record_loads(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    target: str,
    files: list[tuple[Path, int]],
    staged: dict[str, Staged],
) -> None:
    """One ``loads`` row per input: a file's sha256, or for an in-memory input (dict, DataFrame) an md5 over its
    staged rows. Written inside the load's transaction, so the history holds only what was committed."""
    entries = [(str(p), sha256_of(p), n) for p, n in files if p.is_file()]
    for s in staged.values():
        if s.fmt == "derived":  # cases made from the qrels: the qrels file is already recorded
            continue
        if not s.path.is_file():
            entries.append((str(s.path), "rows-md5:" + relation_digest(con, s.name, ["case_id"]), s.rows))
    for path, digest, rows in entries:
        con.execute(
            """INSERT INTO loads SELECT coalesce(max(load_id), 0) + 1, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP FROM loads""",
            [kind, target, path, digest, rows, __version__],
        )


def record_warnings(
    con: duckdb.DuckDBPyConnection, target: str, warnings: list[Finding], *, inherit: str | None = None
) -> None:
    """Keep ``target``'s warnings for ``ragtriage info``: ``warnings``, after those of ``inherit`` (the parent a
    new dataset version carries its load warnings over from)."""
    con.execute("DELETE FROM load_warnings WHERE target = ?", [target])
    if inherit is not None:
        con.execute(
            "INSERT INTO load_warnings SELECT ? AS target, * EXCLUDE (target) FROM load_warnings WHERE target = ?",
            [target, inherit],
        )
    if warnings:
        con.executemany(
            "INSERT INTO load_warnings VALUES (?, ?, ?, ?, ?, ?)",
            [[target, w.file, w.line, w.field, w.code, w.message] for w in warnings],
        )


def _fail_if_errors(findings: list[Finding]) -> list[Finding]:
    if has_errors(findings):
        raise ValidationFailed(errors_of(findings))
    return [f for f in findings if f.severity == "warning"]


def write_dataset(
    con: duckdb.DuckDBPyConnection,
    manifest: DatasetManifest,
    staged: dict[str, Staged],
    findings: list[Finding],
    extra_files: list[tuple[Path, int]],
    *,
    strict: bool = True,
) -> LoadReport:
    """Check the staged cases/labels/documents and write them as a dataset version made current (inside the
    caller's transaction; ``store.byo.load_inputs`` owns it). ``strict`` refuses ids holding controls."""
    if manifest.unit == "span":
        staged = {**staged, "labels": split_span_ids(con, staged["labels"])}
    warnings = _fail_if_errors(findings + dataset_findings(con, staged, manifest, strict=strict))
    version = dataset_hash(con, manifest, staged)
    exists = con.execute("SELECT 1 FROM datasets WHERE dataset_version = ?", [version]).fetchall()
    report = LoadReport("dataset", version, {k: v.rows for k, v in staged.items()}, warnings, bool(exists))
    if not exists:
        _insert_dataset(con, version, manifest, staged)
    set_current_dataset(con, version)
    record_loads(con, "dataset", version, extra_files + [(s.path, s.rows) for s in staged.values()], staged)
    record_warnings(con, version, warnings)
    return report


def _insert_dataset(
    con: duckdb.DuckDBPyConnection, version: str, m: DatasetManifest, staged: dict[str, Staged]
) -> None:
    con.execute(
        "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, now()::TIMESTAMP)",
        [
            version,
            m.name,
            m.version,
            m.unit,
            m.relevance_threshold,
            m.grade_min,
            m.grade_max,
            json.dumps(m.rubric),
            m.corpus_snapshot,
            m.created_at,
            m.rubric_version,
            m.acl_required,
            json.dumps(m.raw, sort_keys=True),
            json.dumps({str(a): b for a, b in sorted(m.grade_map.items())}) if m.grade_map else None,
        ],
    )
    v = sql_str(version)
    c = staged["cases"].name
    con.execute(
        f"""INSERT INTO all_cases BY NAME
            SELECT {v} AS dataset_version, id AS case_id, query,
                   coalesce(answerable, TRUE) AS answerable,
                   coalesce(expected_behavior, CASE WHEN coalesce(answerable, TRUE) THEN 'evidence' END)
                       AS expected_behavior,
                   CAST(principal AS JSON)->>'id' AS principal_id,
                   TRY_CAST(CAST(principal AS JSON)->'groups' AS VARCHAR[]) AS principal_groups,
                   CAST(principal AS JSON)->>'tenant' AS principal_tenant,
                   CAST(filters AS JSON) AS filters,
                   CAST(filters AS JSON)->>'tenant' AS filter_tenant,
                   CAST(filters AS JSON)->>'language' AS filter_language,
                   CAST(filters AS JSON)->>'region' AS filter_region,
                   CAST(filters AS JSON)->>'product' AS filter_product,
                   CAST(filters AS JSON)->>'doc_type' AS filter_doc_type,
                   TRY_CAST(CAST(filters AS JSON)->>'effective_on' AS DATE) AS filter_effective_on,
                   split, source_family, query_type, language, tags,
                   coalesce(critical, FALSE) AS critical, expected_scope, line
            FROM {c}"""
    )
    lab = staged["labels"].name
    con.execute(
        f"""INSERT INTO all_labels BY NAME
            SELECT {v} AS dataset_version, case_id, document_id, chunk_id, section_id,
                   {label_unit(m.unit)} AS unit_id, CAST(grade AS INTEGER) AS grade,
                   coalesce(annotator, 'default') AS annotator, note, line
            FROM {lab} ORDER BY case_id, line"""
    )  # in case order, so a lookup of a few cases (the TUI's case screen) reads a few row groups
    if "documents" in staged or not keeps_derived(con, m.unit):
        con.execute("DELETE FROM documents")
        forget_derived(con)
    if "documents" in staged:
        d = staged["documents"].name
        doc_unit = document_unit(m.unit)
        con.execute(
            f"""INSERT INTO documents BY NAME
                SELECT document_id, chunk_id, section_id, {doc_unit} AS unit_id, line AS position, title, text,
                       doc_type, source_system, language, region, product, tenant, acl, status, effective_from,
                       effective_to, updated_at, chunk_kind, version
                FROM {d}"""
        )


@dataclass(frozen=True)
class RunWrite:
    """How one load writes its runs: over a loaded run of the same id (``replace``), refusing ids that hold
    control characters (``strict``; else counted in a warning), telling each step to ``progress``."""

    replace: bool = False
    strict: bool = True
    progress: Progress = noop


def write_run(
    con: duckdb.DuckDBPyConnection,
    rid: str,
    manifest: dict[str, Any],
    staged: dict[str, Staged],
    unit: str,
    source_format: str,
    facts: RunFacts,
    files: list[tuple[Path, int]],
    source: str,
    how: RunWrite,
) -> LoadReport:
    """Check and write one staged run (inside the caller's transaction). Run topics that are not cases are left
    out, as trec_eval leaves them out, and counted on the run and in one warning."""
    strict, progress = how.strict, how.progress
    res = staged["results"]
    findings = [f for s in staged.values() for f in s.findings]
    if manifest.get("incomplete") is True:  # `ragtriage record` stopped early: missing cases score zero
        findings.append(_incomplete(source, manifest))
    if unreadable(findings):
        # a file that could not be read left nothing (or a half-read table) to check: that is the one cause
        raise ValidationFailed(errors_of(findings))
    if not manifest.get("k"):
        # no run.json k (a TREC file, a DataFrame): judged at 10, never at the list's depth (a deep list would
        # hide every ranking defect below 10); the manifest says where the k came from
        manifest["k"], manifest["k_source"] = DEFAULT_RUN_K, DEFAULT_K_SOURCE
    manifest["run_id"] = rid
    findings = [*findings, *_run_id_findings(source, rid, strict)]
    existing = con.execute("SELECT 1 FROM runs WHERE run_id = ?", [rid]).fetchall()
    if existing and not how.replace:
        msg = f"run {rid!r} is already loaded; pass --replace (or --run-id to load it under another name)"
        findings = [*findings, Finding(source, None, "run_id", "duplicate-run", msg)]
    progress("checking rules")
    contract = source_format in CONTRACT_FORMATS
    if has_errors(findings):
        # Type errors: rows cannot be written, so report them together with every rule over the staged rows.
        _fail_if_errors(
            findings + run_findings(con, staged, unit, check_refs=False, reader_checked=not contract, strict=strict)
        )
    # A stage outside the enum or a rank beyond INTEGER cannot even be written: check the staged rows first.
    pre = apply_rules(con, res, pre_write_rules()) if contract else []
    if unit == "span":
        res = split_span_ids(con, res)
        staged = {**staged, "results": res}
        what = "each result needs start and end, the chunk''s characters in its document (TREC: docno doc:start-end)"
        docs = "documents" if con.execute("SELECT count(*) > 0 FROM documents").fetchall()[0][0] else None
        pre += apply_rules(con, res, span_rules(what, docs))
    _fail_if_errors(findings + pre)
    if existing:
        for table in ROW_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_key = (SELECT run_key FROM runs WHERE run_id = ?)", [rid])
        for table in ("events", "runs"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [rid])
    progress("writing")
    written, table = _insert_run(con, rid, current_dataset_version(con), manifest, staged, unit, source_format)
    progress("checking rules")
    ignored, alike = _ignored_topics(con, res, source, res.rows - written)
    # The remaining rules run over the written rows: a scan of the store is cheaper than one of the typed file,
    # and any error still rolls the whole load back.
    loaded = _loaded_view(con, rid, res, table)
    checked = {**staged, "results": loaded}
    warnings = _fail_if_errors(
        findings
        + pre
        + ignored
        + run_findings(con, checked, unit, check_enums=False, reader_checked=not contract, strict=strict, stored=True)
    )
    # Lists without repeats need no de-duplication pass at evaluation time (trec-compat ranks whole lists).
    repeats = any(w.code == "duplicate-in-list" for w in warnings)
    n_topics = ignored[0].count if ignored else 0
    con.execute(
        "UPDATE runs SET has_repeats = ?, ignored_topics = ?, ignored_rows = ?, score_from_rank = ? WHERE run_id = ?",
        [repeats, n_topics, res.rows - written, facts.score_from_rank, rid],
    )
    record_loads(con, "run", rid, files, staged)
    record_warnings(con, rid, warnings)
    rows = {k_: s.rows for k_, s in staged.items()}
    rows["results"] = written
    return LoadReport(
        "run",
        rid,
        rows,
        warnings,
        fmt=source_format,
        source=source,
        ignored_topics=n_topics,
        ignored_rows=res.rows - written,
        score_from_rank=facts.score_from_rank,
        extra_column_lines=facts.extra_column_lines,
        tags=dict(facts.tags),
        look_alikes=alike,
    )


CONTRACT_FORMATS = ("folder", "jsonl", "csv", "tsv", "parquet")


def _incomplete(source: str, manifest: dict[str, Any]) -> Finding:
    rec = manifest.get("record")
    rec = rec if isinstance(rec, dict) else {}
    done, total = rec.get("cases_recorded"), rec.get("cases_total")
    counted = f" ({done} of {total} cases)" if done is not None and total is not None else ""
    return Finding(
        source,
        None,
        "incomplete",
        "incomplete-run",
        f"the recording stopped early{counted}; cases without results score 0: continue it with "
        "`ragtriage record --resume`",
        "warning",
    )


def _run_id_findings(source: str, rid: str, strict: bool) -> list[Finding]:
    """A run id is shown everywhere (info, gate, TUI title): an empty one is refused, controls in it are
    refused, or without ``strict`` counted."""
    if rid == "":
        return [Finding(source, None, "run_id", "empty-id", "run_id is empty")]
    if not has_controls(rid):
        return []
    msg = control_message("run_id", refused=strict)
    return [Finding(source, None, "run_id", "control-in-id", msg, "error" if strict else "warning")]


def _ignored_topics(con: duckdb.DuckDBPyConnection, res: Staged, source: str, n_rows: int) -> tuple[list[Finding], str]:
    """One warning for the run topics that are not cases (only looked for when some rows were left out), and
    the look-alikes it names."""
    if n_rows <= 0:
        return [], ""
    n, first = con.execute(
        f"""SELECT count(*), min(case_id, 5) FROM (SELECT DISTINCT case_id FROM {res.name}
            WHERE case_id NOT IN (SELECT case_id FROM cases))"""
    ).fetchall()[0]
    shown = ", ".join(repr(x) for x in first)
    msg = (
        f"{n:,} run topic(s) are not cases of the dataset and were ignored with their {n_rows:,} result rows, "
        f"as trec_eval ignores them (first: {shown})"
    )
    alike = _look_alikes(con, res)
    return [Finding(source, None, "case_id", "topic-not-a-case", msg + alike, "warning", int(n))], alike


def _look_alikes(con: duckdb.DuckDBPyConnection, res: Staged) -> str:
    """Ignored topics that differ from a case only by surrounding white space or letter case (``'q1 '`` against
    ``q1``): named, since such a topic is far more likely a typo in either file than a topic of another set."""
    key = "lower(trim({0}, ' ' || chr(9) || chr(13) || chr(10) || chr(160)))"
    pairs = con.execute(
        f"""SELECT DISTINCT r.case_id, c.case_id FROM (SELECT DISTINCT case_id FROM {res.name}
                WHERE case_id NOT IN (SELECT case_id FROM cases)) r
            JOIN cases c ON {key.format("r.case_id")} = {key.format("c.case_id")}
            ORDER BY 1, 2 LIMIT 5"""
    ).fetchall()
    if not pairs:
        return ""
    return "; " + ", ".join(f"topic {t!r} looks like case {c!r}" for t, c in pairs)


def _loaded_view(con: duckdb.DuckDBPyConnection, rid: str, source: Staged, table: str) -> Staged:
    """The run's written rows under the staged names, so the rules report the source file's lines."""
    # Straight from the table written: the stage stays the stored enum (never NULL), no row is joined to its run,
    # and a plain run's chunk id is a constant NULL, which the rules over it fold away.
    chunk = "chunk_id" if table == FULL_ROWS else "CAST(NULL AS VARCHAR) AS chunk_id"
    chunk += ', span_start AS "start", span_end AS "end"' if table == FULL_ROWS else ', NULL AS "start", NULL AS "end"'
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW stg_loaded_results AS
            SELECT line, case_id, stage, rank, document_id, {chunk}, score
            FROM {table} WHERE run_key = (SELECT run_key FROM runs WHERE run_id = {sql_str(rid)})"""
    ).fetchall()
    return Staged("stg_loaded_results", source.path, source.fmt, source.rows, [], source.line_label)


def _insert_run(
    con: duckdb.DuckDBPyConnection,
    rid: str,
    version: str,
    m: dict[str, Any],
    staged: dict[str, Staged],
    unit: str,
    source_format: str,
) -> tuple[int, str]:
    """Write the run and its rows whose case is a case of the dataset; returns how many rows were written, and
    the table they went to (:func:`row_table`)."""

    def js(key: str) -> str | None:
        return json.dumps(m[key], sort_keys=True) if m.get(key) is not None else None

    con.execute(
        """INSERT INTO runs SELECT ?, (SELECT coalesce(max(run_key), 0) + 1 FROM runs), ?,
                  ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, 0, 0, FALSE, now()::TIMESTAMP""",
        [
            rid,
            unit,
            version,
            m.get("dataset_version"),
            m.get("created_at"),
            m.get("corpus_version"),
            m.get("index_version"),
            m.get("embedding_model"),
            None if m.get("chunking") is None else str(m.get("chunking")),
            None if m.get("reranker") is None else str(m.get("reranker")),
            int(m["k"]),
            m.get("candidate_k"),
            js("filters_applied"),
            js("system"),
            json.dumps(m, sort_keys=True),
            source_format,
        ],
    )
    r = staged["results"].name
    key = con.execute("SELECT run_key FROM runs WHERE run_id = ?", [rid]).fetchall()[0][0]
    table = FULL_ROWS if unit == "span" else row_table(con, r)  # a span run's offsets are in the full rows
    extra = ", chunk_id, snippet, CAST(metadata AS JSON) AS metadata" if table == FULL_ROWS else ""
    extra += ', "start" AS span_start, "end" AS span_end' if unit == "span" else ""
    where = "WHERE case_id IN (SELECT case_id FROM cases)"
    if source_format in CONTRACT_FORMATS and _all_cases(con, r):
        where = ""
    # Line numbers are already materialised, so row order no longer matters: let DuckDB write in parallel.
    con.execute("SET preserve_insertion_order = false")
    written = con.execute(
        f"""INSERT INTO {table} BY NAME
            SELECT {int(key)} AS run_key, case_id,
                   CAST(coalesce(stage, 'final') AS result_stage) AS stage, CAST(rank AS INTEGER) AS rank,
                   document_id, score, line{extra}
            FROM {r} {where}"""
    ).fetchall()[0][0]
    con.execute("RESET preserve_insertion_order").fetchall()
    if "events" in staged:
        e = staged["events"].name
        con.execute(
            f"""INSERT INTO events BY NAME
                SELECT {sql_str(rid)} AS run_id, case_id, latency_ms, timed_out, empty, fallback, status, error
                FROM {e}"""
        )
    return int(written), table


def _all_cases(con: duckdb.DuckDBPyConnection, staged: str) -> bool:
    """Whether every topic of a staged run (a Parquet file or a typed table) is a case: its distinct topics are
    tested at less cost than every row, which then need no test as they are written. (A TREC run's staged view
    ranks or joins its rows, which that test would pay for.)"""
    foreign = con.execute(
        f"""SELECT EXISTS (SELECT 1 FROM (SELECT DISTINCT case_id FROM {staged})
                           WHERE case_id IS NULL OR case_id NOT IN (SELECT case_id FROM cases))"""
    ).fetchall()[0][0]
    return not foreign


PLAIN_ROWS, FULL_ROWS = "result_rows_plain", "result_rows_full"
ROW_TABLES = (PLAIN_ROWS, FULL_ROWS)


def row_table(con: duckdb.DuckDBPyConnection, staged: str) -> str:
    """The table a staged run's rows go to: ``result_rows_plain`` when no row has a chunk id, a snippet or
    metadata (see store/schema.py), else ``result_rows_full``. A column the input lacks is a constant NULL in the
    staged relation, so the test then reads no row."""
    extras = con.execute(
        f"""SELECT EXISTS (SELECT 1 FROM {staged}
                           WHERE chunk_id IS NOT NULL OR snippet IS NOT NULL OR metadata IS NOT NULL)"""
    ).fetchall()[0][0]
    return FULL_ROWS if extras else PLAIN_ROWS


__all__ = [
    "LoadReport",
    "Progress",
    "RunWrite",
    "noop",
    "record_loads",
    "record_warnings",
    "write_dataset",
    "write_run",
]
