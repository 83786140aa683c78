"""In-memory inputs: pandas or polars DataFrames and pyarrow Tables, scanned in place by DuckDB.

Column names follow the tools people already use: ir_measures (``query_id``, ``doc_id``, ``relevance``,
``score``), ranx (``q_id``, ``doc_id``), TREC (``qid``, ``docno``, ``rel``) and this contract (``case_id``,
``document_id``, ``grade``). The object is registered as a DuckDB view, never converted row by row; a polars
frame is handed over as Arrow (zero copy). Findings name the row (1-based) and the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.errors import Finding, counted
from ragtriage.contract.staging import Staged, qident
from ragtriage.contract.trec import CASE_COLUMNS, LABEL_COLUMNS, RESULT_COLUMNS, RunFacts, not_finite

ALIASES = {
    "case_id": ("case_id", "query_id", "qid", "q_id", "query-id", "topic", "topic_id"),
    "document_id": ("document_id", "doc_id", "docno", "docid", "corpus-id", "corpus_id", "pid"),
    "grade": ("grade", "relevance", "rel", "label", "score"),
    "score": ("score",),
    "rank": ("rank",),
    "chunk_id": ("chunk_id",),
    "stage": ("stage",),
    "annotator": ("annotator",),
    "id": ("id", "case_id", "query_id", "qid", "q_id", "_id", "topic"),
    "query": ("query", "text", "title"),
    "tag": ("tag", "run_id", "run", "name"),
}
_REQUIRED = {"qrels": ("case_id", "document_id", "grade"), "run": ("case_id", "document_id"), "topics": ("id", "query")}


def is_frame(obj: object) -> bool:
    """A pandas/polars DataFrame or a pyarrow Table (duck-typed: no import of pandas or polars)."""
    mod = type(obj).__module__.split(".")[0]
    return mod in ("pandas", "polars", "pyarrow")


def _columns(obj: Any) -> list[str]:
    return [str(c) for c in (obj.column_names if hasattr(obj, "column_names") else obj.columns)]


def pick_column(cols: list[str], field: str) -> str | None:
    """The column of ``cols`` holding ``field`` under any of its names (:data:`ALIASES`), case-insensitively."""
    lower = {c.lower(): c for c in cols}
    return next((lower[a] for a in ALIASES[field] if a in lower), None)


def stage_frame(con: duckdb.DuckDBPyConnection, obj: Any, name: str, role: str) -> tuple[Staged, RunFacts]:
    """Stage a DataFrame/Table as qrels, run or topics rows (``role``)."""
    label = f"<{role} {type(obj).__module__.split('.')[0]} {type(obj).__name__}>"
    path = Path(label)
    if type(obj).__module__.startswith("polars"):
        obj = obj.to_arrow()
    cols = _columns(obj)
    view = f"{name}__obj"
    con.register(view, obj)
    pick: dict[str, str | None] = {f: pick_column(cols, f) for f in ALIASES}
    if role == "run" and pick["grade"] == pick["score"]:
        pick["grade"] = None
    if role == "qrels" and pick["grade"] is None:
        pick["grade"] = pick["score"]
    missing = [f for f in _REQUIRED[role] if pick[f] is None]
    if role == "run" and pick["score"] is None and pick["rank"] is None:
        missing.append("score or rank")
    if missing:
        msg = f"needs column(s) {', '.join(missing)} (found: {', '.join(cols)})"
        return Staged(
            name, path, "frame", 0, [Finding(label, None, missing[0], "missing-field", msg)], "row"
        ), RunFacts()
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name}__raw AS SELECT row_number() OVER () AS line, * FROM {view}")
    cols_sql = _Columns(pick)
    findings: list[Finding] = []
    for f in _REQUIRED[role]:
        empty = f"{cols_sql(f)} IS NULL OR {cols_sql(f)} = ''"
        findings += counted(con, f"{name}__raw", empty, "line", path, f, "missing-field", f"{f} is empty")
    facts = RunFacts()
    findings += {"qrels": _qrels, "run": _run, "topics": _topics}[role](con, name, cols_sql, path, facts)
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
    con.execute(f"DROP VIEW {name}__raw")
    con.unregister(view)
    return Staged(name, path, "frame", int(rows), findings, "row"), facts


class _Columns:
    """SQL for a contract field read from the frame's own column (as text), or NULL when it has none."""

    def __init__(self, pick: dict[str, str | None]) -> None:
        self.pick = pick

    def __call__(self, f: str) -> str:
        c = self.pick[f]
        return f"CAST({qident(c)} AS VARCHAR)" if c else "CAST(NULL AS VARCHAR)"


def _qrels(con: duckdb.DuckDBPyConnection, name: str, col: _Columns, path: Path, facts: RunFacts) -> list[Finding]:
    g = f"TRY_CAST({col('grade')} AS DOUBLE)"
    ok = f"({g} IS NOT NULL AND {g} = floor({g}))"
    findings = counted(
        con, f"{name}__raw", f"NOT coalesce({ok}, FALSE)", col("grade"), path, "grade", "wrong-type",
        "relevance {v} is not an integer",
    )  # fmt: skip
    ann = f"coalesce({col('annotator')}, 'default') AS annotator"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, {col("case_id")} AS case_id, {col("document_id")} AS document_id,
                   CAST({g} AS BIGINT) AS grade, {LABEL_COLUMNS.replace("'default' AS annotator", ann)}
            FROM {name}__raw WHERE {ok}"""
    )
    return findings


def _run(con: duckdb.DuckDBPyConnection, name: str, col: _Columns, path: Path, facts: RunFacts) -> list[Finding]:
    """Ranked by the frame's rank when it has one, else by score descending and docno descending (trec_eval)."""
    has_score = col.pick["score"] is not None
    s = f"TRY_CAST({col('score')} AS DOUBLE)" if has_score else f"1.0 / TRY_CAST({col('rank')} AS DOUBLE)"
    facts.score_from_rank = not has_score
    bad = f"({not_finite(s)})"
    fld = "score" if has_score else "rank"
    findings = counted(
        con, f"{name}__raw", bad, col(fld), path, fld, "bad-score", f"{fld} {{v}} does not give a finite score"
    )
    order = f"TRY_CAST({col('rank')} AS BIGINT), {s} DESC" if col.pick["rank"] else f"{s} DESC"
    part = f"{col('case_id')}, coalesce({col('stage')}, 'final')"
    chunk = f"{col('chunk_id')} AS chunk_id"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, {col("case_id")} AS case_id, coalesce({col("stage")}, 'final') AS stage,
                   CAST(row_number() OVER (PARTITION BY {part} ORDER BY {order}, {col("document_id")} DESC)
                        AS BIGINT) AS rank,
                   {col("document_id")} AS document_id, {s} AS score,
                   {RESULT_COLUMNS.replace("CAST(NULL AS VARCHAR) AS chunk_id", chunk)}, {col("tag")} AS tag
            FROM {name}__raw WHERE NOT {bad}"""
    )
    tags = con.execute(
        f"SELECT tag, count(*) FROM {name} WHERE tag IS NOT NULL GROUP BY tag ORDER BY min(line)"
    ).fetchall()
    facts.tags = {str(t): int(n) for t, n in tags}
    return findings


def _topics(con: duckdb.DuckDBPyConnection, name: str, col: _Columns, path: Path, facts: RunFacts) -> list[Finding]:
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, {col("id")} AS id, {col("query")} AS query, {CASE_COLUMNS} FROM {name}__raw"""
    )
    return []
