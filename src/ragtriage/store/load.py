"""Loading datasets and runs into the store, each in one transaction.

A load stages every file into typed temp tables, checks every rule, and only then writes; any error rolls the
whole transaction back, so the database is exactly as it was. Warnings (ingestion and dataset signals) are kept
in ``load_warnings`` and counted by ``ragtriage info``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ragtriage import __version__
from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.fields import CASES, DOCUMENTS, EVENTS, LABELS, RESULTS
from ragtriage.contract.manifest import DatasetManifest, parse_dataset_manifest, parse_run_manifest
from ragtriage.contract.rules import apply_rules
from ragtriage.contract.staging import Staged, sql_str
from ragtriage.safe_text import has_controls
from ragtriage.store.connection import current_dataset_version, set_current_dataset
from ragtriage.store.dataset_rules import dataset_findings
from ragtriage.store.discover import DatasetFiles, RunFiles, discover_dataset, discover_run, stage_dataset, stage_run
from ragtriage.store.run_rules import pre_write_rules, run_findings
from ragtriage.store.versioning import dataset_hash

Progress = Callable[[str], None]


@dataclass
class LoadReport:
    kind: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)
    warnings: list[Finding] = field(default_factory=list)
    unchanged: bool = False


def _noop(_: str) -> None:
    return None


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _record_loads(con: duckdb.DuckDBPyConnection, kind: str, target: str, files: list[tuple[Path, int]]) -> None:
    for path, rows in files:
        con.execute(
            """INSERT INTO loads SELECT coalesce(max(load_id), 0) + 1, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP FROM loads""",
            [kind, target, str(path), file_sha256(path), rows, __version__],
        )


def _record_warnings(con: duckdb.DuckDBPyConnection, target: str, warnings: list[Finding]) -> None:
    con.execute("DELETE FROM load_warnings WHERE target = ?", [target])
    if warnings:
        con.executemany(
            "INSERT INTO load_warnings VALUES (?, ?, ?, ?, ?, ?)",
            [[target, w.file, w.line, w.field, w.code, w.message] for w in warnings],
        )


def _fail_if_errors(findings: list[Finding]) -> list[Finding]:
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise ValidationFailed(errors)
    return [f for f in findings if f.severity == "warning"]


UNREADABLE = ("missing-file", "empty-file", "encoding", "unreadable", "bad-header")


def _fail_if_unreadable(findings: list[Finding]) -> None:
    """Type errors still let the semantic rules run (so all problems are reported at once); an unreadable file
    leaves nothing to run them on."""
    if any(f.code in UNREADABLE and f.severity == "error" for f in findings):
        raise ValidationFailed([f for f in findings if f.severity == "error"])


def _unit_expr(unit: str, alias: str = "") -> str:
    p = f"{alias}." if alias else ""
    if unit == "document":
        return f"{p}document_id"
    return f"coalesce({p}chunk_id, {p}section_id)"


def load_dataset(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    fmt: str | None = None,
    unit: str | None = None,
    threshold: int | None = None,
    progress: Progress = _noop,
    strict: bool = False,
) -> LoadReport:
    """Load a dataset folder (dataset.json + cases + labels + documents, or a TREC/BEIR layout).
    ``strict`` refuses ids holding control characters (otherwise a warning with counts)."""
    files = discover_dataset(Path(path))
    con.execute("BEGIN TRANSACTION")
    try:
        report = _load_dataset_tx(con, files, fmt=fmt, unit=unit, threshold=threshold, progress=progress, strict=strict)
        con.execute("COMMIT")
        return report
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _load_dataset_tx(
    con: duckdb.DuckDBPyConnection,
    files: DatasetFiles,
    *,
    fmt: str | None,
    unit: str | None,
    threshold: int | None,
    progress: Progress,
    strict: bool = False,
) -> LoadReport:
    progress("reading manifest")
    manifest, findings = parse_dataset_manifest(
        files.manifest, default_name=files.root.name, unit=unit, threshold=threshold
    )
    if manifest is None:
        raise ValidationFailed(findings)
    progress("reading cases, labels, documents")
    staged = stage_dataset(con, files, fmt)
    for s in staged.values():
        findings += s.findings
    _fail_if_unreadable(findings)
    progress("checking rules")
    warnings = _fail_if_errors(findings + dataset_findings(con, staged, manifest, strict=strict))
    progress("writing")
    version = dataset_hash(con, manifest, staged)
    exists = con.execute("SELECT 1 FROM datasets WHERE dataset_version = ?", [version]).fetchone()
    report = LoadReport("dataset", version, {k: v.rows for k, v in staged.items()}, warnings, bool(exists))
    if not exists:
        _insert_dataset(con, version, manifest, staged)
    set_current_dataset(con, version)
    manifest_files = [(files.manifest, 1)] if files.manifest else []
    _record_loads(con, "dataset", version, manifest_files + [(s.path, s.rows) for s in staged.values()])
    _record_warnings(con, version, warnings)
    return report


def _insert_dataset(
    con: duckdb.DuckDBPyConnection, version: str, m: DatasetManifest, staged: dict[str, Staged]
) -> None:
    con.execute(
        "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, now()::TIMESTAMP)",
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
                   {_unit_expr(m.unit)} AS unit_id, CAST(grade AS INTEGER) AS grade,
                   coalesce(annotator, 'default') AS annotator, note, line
            FROM {lab}"""
    )
    con.execute("DELETE FROM documents")
    if "documents" in staged:
        d = staged["documents"].name
        doc_unit = "document_id" if m.unit == "document" else "coalesce(chunk_id, section_id, document_id)"
        con.execute(
            f"""INSERT INTO documents BY NAME
                SELECT document_id, chunk_id, section_id, {doc_unit} AS unit_id, line AS position, title, text,
                       doc_type, source_system, language, region, product, tenant, acl, status, effective_from,
                       effective_to, updated_at, chunk_kind, version
                FROM {d}"""
        )


def load_run(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    replace: bool = False,
    fmt: str | None = None,
    run_id: str | None = None,
    k: int | None = None,
    progress: Progress = _noop,
    strict: bool = False,
) -> LoadReport:
    """Load one run (a folder with run.json + results + optional events, or a TREC run file).
    ``strict`` refuses ids holding control characters (otherwise a warning with counts)."""
    files = discover_run(Path(path), fmt)
    con.execute("BEGIN TRANSACTION")
    try:
        report = _load_run_tx(con, files, replace=replace, run_id=run_id, k=k, progress=progress, strict=strict)
        con.execute("COMMIT")
        return report
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _load_run_tx(
    con: duckdb.DuckDBPyConnection,
    files: RunFiles,
    *,
    replace: bool,
    run_id: str | None,
    k: int | None,
    progress: Progress,
    strict: bool = False,
) -> LoadReport:
    version = current_dataset_version(con)
    unit = con.execute("SELECT unit FROM datasets WHERE dataset_version = ?", [version]).fetchone()[0]  # type: ignore[index]
    progress("reading run")
    findings: list[Finding] = []
    manifest: dict[str, Any] | None
    if files.manifest is not None:
        manifest, findings = parse_run_manifest(files.manifest)
        if manifest is None:
            raise ValidationFailed(findings)
    else:
        manifest = {}
    staged, tag = stage_run(con, files, unit)
    for s in staged.values():
        findings += s.findings
    _fail_if_unreadable(findings)
    rid = run_id or manifest.get("run_id") or tag or files.root.stem
    if not manifest.get("k"):
        depth = con.execute(
            f"SELECT max(n) FROM (SELECT count(*) n FROM {staged['results'].name} GROUP BY case_id)"
        ).fetchone()[0]  # type: ignore[index]
        manifest["k"] = k or int(depth or 1)
    manifest["run_id"] = rid
    findings += _run_id_findings(files, str(rid), strict)
    existing = con.execute("SELECT 1 FROM runs WHERE run_id = ?", [rid]).fetchone()
    if existing and not replace:
        raise ValidationFailed(
            [
                Finding(
                    str(files.root), None, "run_id", "duplicate-run", f"run {rid!r} is already loaded; pass --replace"
                )
            ]
        )
    progress("checking rules")
    if any(f.severity == "error" for f in findings):
        # Type errors: rows cannot be written, so report them together with every rule over the staged rows.
        _fail_if_errors(findings + run_findings(con, staged, unit))
    # A stage outside the enum or a rank beyond INTEGER cannot even be written: check the staged rows first.
    pre = apply_rules(con, staged["results"], pre_write_rules())
    _fail_if_errors(findings + pre)
    if existing:
        con.execute("DELETE FROM result_rows WHERE run_key = (SELECT run_key FROM runs WHERE run_id = ?)", [rid])
        for table in ("events", "runs"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [rid])
    progress("writing")
    _insert_run(con, rid, version, manifest, staged, unit, "trec" if files.trec else "folder")
    progress("checking rules")
    # The remaining rules run over the written rows: a scan of the store is cheaper than one of the typed file,
    # and any error still rolls the whole load back.
    loaded = _loaded_view(con, rid, staged["results"])
    checked = {**staged, "results": loaded}
    warnings = _fail_if_errors(findings + pre + run_findings(con, checked, unit, check_enums=False, strict=strict))
    # Lists without repeats need no de-duplication pass at evaluation time (trec-compat ranks whole lists).
    repeats = any(w.code == "duplicate-in-list" for w in warnings)
    con.execute("UPDATE runs SET has_repeats = ? WHERE run_id = ?", [repeats, rid])
    manifest_files = [(files.manifest, 1)] if files.manifest else []
    _record_loads(con, "run", rid, manifest_files + [(s.path, s.rows) for s in staged.values()])
    _record_warnings(con, rid, warnings)
    return LoadReport("run", rid, {k_: s.rows for k_, s in staged.items()}, warnings)


def _run_id_findings(files: RunFiles, rid: str, strict: bool) -> list[Finding]:
    """A run id is shown everywhere (info, gate, TUI title): controls in it are counted, or refused."""
    if rid == "":
        return [Finding(str(files.manifest or files.root), None, "run_id", "empty-id", "run_id is empty")]
    if not has_controls(rid):
        return []
    msg = "run_id holds control characters (terminal escapes, bidi marks); they are shown escaped"
    return [
        Finding(
            str(files.manifest or files.root),
            None,
            "run_id",
            "control-in-id",
            msg if strict else msg + "; --strict refuses them",
            "error" if strict else "warning",
        )
    ]


def _loaded_view(con: duckdb.DuckDBPyConnection, rid: str, source: Staged) -> Staged:
    """The run's written rows under the staged names, so the rules report the source file's lines."""
    con.execute(
        f"""CREATE OR REPLACE TEMP VIEW stg_loaded_results AS
            SELECT line, case_id, stage, rank, document_id, chunk_id, score
            FROM results WHERE run_id = {sql_str(rid)}"""
    )
    return Staged("stg_loaded_results", source.path, source.fmt, source.rows, [], source.line_label)


def _insert_run(
    con: duckdb.DuckDBPyConnection,
    rid: str,
    version: str,
    m: dict[str, Any],
    staged: dict[str, Staged],
    unit: str,
    source_format: str,
) -> None:
    def js(key: str) -> str | None:
        return json.dumps(m[key], sort_keys=True) if m.get(key) is not None else None

    con.execute(
        """INSERT INTO runs SELECT ?, (SELECT coalesce(max(run_key), 0) + 1 FROM runs), ?,
                  ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, now()::TIMESTAMP""",
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
    # Line numbers are already materialised, so row order no longer matters: let DuckDB write in parallel.
    con.execute("SET preserve_insertion_order = false")
    con.execute(
        f"""INSERT INTO result_rows BY NAME
            SELECT {int(key)} AS run_key, case_id,
                   CAST(coalesce(stage, 'final') AS result_stage) AS stage, CAST(rank AS INTEGER) AS rank,
                   document_id, chunk_id, score, snippet, CAST(metadata AS JSON) AS metadata, line
            FROM {r}"""
    )
    con.execute("RESET preserve_insertion_order")
    if "events" in staged:
        e = staged["events"].name
        con.execute(
            f"""INSERT INTO events BY NAME
                SELECT {sql_str(rid)} AS run_id, case_id, latency_ms, timed_out, empty, fallback, status, error
                FROM {e}"""
        )


__all__ = ["LoadReport", "load_dataset", "load_run", "CASES", "LABELS", "DOCUMENTS", "RESULTS", "EVENTS"]
