"""CSV export of triage: each failing or annotated case with its automatic and its human classification.

The TUI's export key and ``ragtriage export-notes`` both call :func:`export_table` then :func:`write_csv`, so the
file is the same whichever wrote it. It is written by the one CSV writer (:func:`ragtriage.csv_out.write_csv`,
re-exported here): formula-like cells get a leading apostrophe and control characters are made visible.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, is_dataclass
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.csv_out import write_csv
from ragtriage.notes.store import NotesStore

__all__ = ["ExportError", "export_table", "write_csv"]

BASE_COLUMNS = (
    "case_id",
    "run_id",
    "query",
    "auto_category",
    "auto_rule",
    "user_category",
    "status",
    "note",
    "author",
    "updated_at",
)


class ExportError(Exception):
    """The export cannot be produced (core function missing, unknown run)."""


def as_arrow(obj: Any) -> pa.Table:
    """Whatever a core function returned (Arrow table or reader, DuckDB relation, dataclasses) as an Arrow table."""
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatchReader):
        return obj.read_all()
    if hasattr(obj, "to_arrow_table"):
        return obj.to_arrow_table()
    if is_dataclass(obj) and not isinstance(obj, type):
        for attr in ("table", "per_case", "rows"):
            inner = getattr(obj, attr, None)
            if inner is not None:
                return as_arrow(inner)
        return pa.Table.from_pylist([asdict(obj)])
    if isinstance(obj, list | tuple):
        rows = [asdict(r) if is_dataclass(r) and not isinstance(r, type) else dict(r) for r in obj]
        return pa.Table.from_pylist(rows)
    raise ExportError(f"cannot read a {type(obj).__name__} as a table")


def core_function(module: str, name: str) -> Any:
    """A function of a core layer, or a clear error naming what is missing."""
    try:
        mod = importlib.import_module(f"ragtriage.{module}")
    except ImportError as exc:
        raise ExportError(f"ragtriage.{module} cannot be imported ({exc})") from exc
    fn = getattr(mod, name, None)
    if fn is None:  # not re-exported yet: a submodule of the same name may hold it
        try:
            fn = importlib.import_module(f"ragtriage.{module}.{name}")
        except ImportError:
            fn = None
    if fn is not None and not callable(fn):  # a submodule of the same name: take its function
        fn = getattr(fn, name, None)
    if fn is None or not callable(fn):
        raise ExportError(f"ragtriage.{module}.{name} is not available in this build")
    return fn


def first_column(table: pa.Table, *candidates: str) -> str | None:
    return next((c for c in candidates if c in table.column_names), None)


def wide_per_case(table: pa.Table, cur: duckdb.DuckDBPyConnection) -> pa.Table:
    """Per-case metrics one row per case: long tables (metric, k, value) are pivoted to ``metric@k`` columns."""
    names = set(table.column_names)
    if {"metric", "value"} <= names:
        label = "metric || '@' || CAST(k AS VARCHAR)" if "k" in names else "metric"
        cur.register("_long", table)
        try:
            return cur.sql(
                f"PIVOT (SELECT case_id, {label} AS m, value FROM _long) ON m USING first(value) GROUP BY case_id"
            ).to_arrow_table()
        finally:
            cur.unregister("_long")
    return table


def _failures(cur: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """One row per failing case: its automatic categories and rules (a case may break several rules)."""
    table = as_arrow(core_function("classify", "failures")(cur, run_id))
    cat = first_column(table, "category", "auto_category", "defect")
    rule = first_column(table, "rule", "rule_name", "auto_rule")
    if "case_id" not in table.column_names or cat is None:
        raise ExportError(f"classify.failures returned columns {table.column_names}; need case_id and category")
    agg = "string_agg(DISTINCT CAST({0} AS VARCHAR), '; ' ORDER BY CAST({0} AS VARCHAR))"
    rule_expr = agg.format(rule) if rule else "NULL"
    cur.register("_fail", table)
    try:
        return cur.sql(
            f"SELECT case_id, {agg.format(cat)} AS auto_category, {rule_expr} AS auto_rule FROM _fail GROUP BY case_id"
        ).to_arrow_table()
    finally:
        cur.unregister("_fail")


def export_table(con: duckdb.DuckDBPyConnection, store: NotesStore, run_id: str | None = None) -> pa.Table:
    """Rows for every failing or annotated case of ``run_id`` (every run when None), ordered by run and case."""
    cur = con.cursor()
    known = [r[0] for r in cur.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    if run_id is not None and run_id not in known:
        raise ExportError(f"unknown run {run_id!r}; loaded runs: {', '.join(known) or 'none'}")
    runs = [run_id] if run_id is not None else known
    parts = [_export_run(cur, store, r) for r in runs]
    if not parts:
        return pa.table({c: pa.array([], pa.string()) for c in BASE_COLUMNS})
    return pa.concat_tables(parts, promote_options="permissive")


def _export_run(cur: duckdb.DuckDBPyConnection, store: NotesStore, run_id: str) -> pa.Table:
    failures = _failures(cur, run_id)
    notes = store.to_arrow(run_id)
    metrics = wide_per_case(as_arrow(core_function("metrics", "per_case")(cur, run_id)), cur)
    metric_cols = [c for c in metrics.column_names if c not in ("case_id", "run_id")]
    cur.register("_f", failures)
    cur.register("_n", notes)
    cur.register("_m", metrics.select(["case_id", *metric_cols]))
    try:
        select_metrics = "".join(f', _m."{c}"' for c in metric_cols)
        return cur.sql(
            "WITH keys AS (SELECT case_id FROM _f UNION SELECT case_id FROM _n)"
            " SELECT k.case_id, ? AS run_id, c.query, _f.auto_category, _f.auto_rule,"
            " _n.category AS user_category, _n.status, _n.note, _n.author, _n.updated_at"
            + select_metrics
            + " FROM keys k LEFT JOIN cases c USING (case_id) LEFT JOIN _f USING (case_id)"
            " LEFT JOIN _n USING (case_id) LEFT JOIN _m USING (case_id) ORDER BY k.case_id",
            params=[run_id],
        ).to_arrow_table()
    finally:
        for name in ("_f", "_n", "_m"):
            cur.unregister(name)
