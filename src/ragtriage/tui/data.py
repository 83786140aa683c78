"""What each TUI view shows, fetched through the core API (no textual here, no figure computed here).

Every function takes its own DuckDB cursor (one per worker thread) and returns Arrow tables or plain dicts. A
core function that is missing or fails raises :class:`ViewError` with a sentence the view prints in place of
its table, so one broken layer never takes the whole TUI down.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import non_null_values
from ragtriage.metrics import summary_cache
from ragtriage.notes import NotesStore
from ragtriage.notes.export import ExportError, as_arrow, core_function, first_column, wide_per_case

CASE_DIMENSIONS = ("query_type", "language", "split", "source_family", "critical", "tags")
EVIDENCE_DIMENSIONS = ("doc_type", "source_system", "chunk_kind")
DEFAULT_KS = (3, 5, 10)


class ViewError(Exception):
    """A view cannot be filled: the sentence says which core function and why."""


def call(module: str, name: str, *args: Any, **kwargs: Any) -> Any:
    try:
        fn = core_function(module, name)
    except ExportError as exc:
        raise ViewError(str(exc)) from exc
    try:
        return fn(*args, **kwargs)
    except ViewError:
        raise
    except Exception as exc:  # the core said no (bad run, missing data): show its words
        raise ViewError(f"ragtriage.{module}.{name}: {type(exc).__name__}: {exc}") from exc


def table(module: str, name: str, *args: Any, **kwargs: Any) -> pa.Table:
    try:
        return as_arrow(call(module, name, *args, **kwargs))
    except ExportError as exc:
        raise ViewError(f"ragtriage.{module}.{name}: {exc}") from exc


def one_row(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> dict[str, Any] | None:
    rows = cur.sql(sql, params=params).to_arrow_table().to_pylist()
    return rows[0] if rows else None


class RunCache:
    """Whole-run core answers (failures, leakage, per-case metrics), fetched once per run, shared by workers.

    A failure is cached too, so a missing core function is reported once, not retried on every case move.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}
        self._tables: dict[tuple[str, str], pa.Table | ViewError] = {}

    def get(self, kind: str, run_id: str, cur: duckdb.DuckDBPyConnection) -> pa.Table:
        key = (kind, run_id)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # a second asker waits for the first instead of computing the same answer again
            hit = self._tables.get(key)
            if hit is None:
                try:
                    hit = FETCHERS[kind](cur, run_id)
                except ViewError as exc:
                    hit = exc
                self._tables[key] = hit
        if isinstance(hit, ViewError):
            raise hit
        return hit


def run_ids(cur: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in cur.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]


def ndcg_column(per_case: pa.Table, k: int = 10) -> str | None:
    """The per-case nDCG column to draw: nDCG@k when present, else the deepest nDCG cutoff."""
    names: list[str] = [c for c in per_case.column_names if c.lower().startswith("ndcg@")]
    exact = next((c for c in names if c.lower() == f"ndcg@{k}"), None)
    if exact:
        return exact
    deepest: str | None = max(
        names, key=lambda c: int(c.split("@")[1]) if c.split("@")[1].isdigit() else 0, default=None
    )
    return deepest


def identity(cur: duckdb.DuckDBPyConnection, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's row and the current dataset's identity (straight from the store)."""
    run = one_row(cur, "SELECT * EXCLUDE (manifest, system) FROM runs WHERE run_id = ?", [run_id])
    if run is None:
        raise ViewError(f"unknown run {run_id!r}; loaded runs: {', '.join(run_ids(cur)) or 'none'}")
    dataset = (
        one_row(
            cur,
            "SELECT name, version, dataset_version, unit, relevance_threshold, grade_min, grade_max, corpus_snapshot"
            " FROM current_dataset",
            [],
        )
        or {}
    )
    return run, dataset


SUMMARY_COLUMNS = ("name", "mean", "median", "p10", "min", "ci_low", "ci_high", "zero_hit_rate", "n")
SUMMARY_CONTEXT = ("threshold", "gain", "unit", "stage", "mode")


def summary(cur: duckdb.DuckDBPyConnection, run_id: str, db_path: str | Path | None = None) -> tuple[pa.Table, str]:
    """metrics.summarize's table (the columns that fit 80 wide) and the context every figure needs (threshold,
    gain, unit, stage). With ``db_path`` the full table is read from / written to :mod:`summary_cache`."""
    full = summary_cache.load(db_path, run_id) if db_path is not None else None
    if full is None:
        full = table("metrics", "summarize", cur, run_id)
        if db_path is not None:
            summary_cache.save(db_path, run_id, full)
    keep = [c for c in SUMMARY_COLUMNS if c in full.column_names] or full.column_names
    context = ""
    if full.num_rows:
        first = full.slice(0, 1).to_pylist()[0]
        context = " ".join(f"{c}={first[c]}" for c in SUMMARY_CONTEXT if c in first)
    return full.select(keep), context


def distribution(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> tuple[list[int], str]:
    """Counts of per-case nDCG in ten bins of 0.1 (drawing input only; the values are metrics.per_case's)."""
    per_case = cache.get("per_case", run_id, cur)
    col = ndcg_column(per_case)
    if col is None:
        raise ViewError(f"metrics.per_case has no nDCG column ({', '.join(per_case.column_names)})")
    values = non_null_values(per_case.column(col), np.float64)
    counts = np.histogram(values, bins=10, range=(0.0, 1.0))[0].tolist()
    return counts, f"{col} per case, 10 bins 0..1, n={len(values)}"


def category_counts(fail: pa.Table) -> pa.Table:
    cat = first_column(fail, "category", "auto_category", "defect")
    if cat is None:
        raise ViewError(f"classify.failures has no category column ({', '.join(fail.column_names)})")
    counts = fail.group_by(cat).aggregate([("case_id", "count_distinct")])
    return counts.rename_columns(["category", "cases"]).sort_by([("cases", "descending")])


def failures(cur: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    return table("classify", "failures", cur, run_id)


def leakage(cur: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    return table("checks", "leakage", cur, run_id)


def per_case(cur: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    return wide_per_case(table("metrics", "per_case", cur, run_id), cur)


def unit_locations(cur: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Where every labelled unit of every case is (one call per run: per case it costs as much as per run)."""
    return table("classify", "unit_locations", cur, run_id)


FETCHERS = {"failures": failures, "leakage": leakage, "per_case": per_case, "unit_locations": unit_locations}


def lead(rows: pa.Table, first: tuple[str, ...], last: tuple[str, ...] = ()) -> pa.Table:
    """The columns a reader compares placed first, so they are on screen at 80 columns; columns constant in a
    view (already named in its status line) moved to the end."""
    names = rows.column_names
    head = [c for c in first if c in names]
    tail = [c for c in last if c in names and c not in head]
    return rows.select(head + [c for c in names if c not in head and c not in tail] + tail)


def slices(cur: duckdb.DuckDBPyConnection, run_id: str, dimension: str) -> pa.Table:
    return lead(
        table("metrics", "slices", cur, run_id, by=dimension),
        ("slice_value", "n", "mean", "median", "p10", "zero_hit_rate", "n_without_relevant"),
        ("dimension", "measure", "threshold", "gain"),
    )


def zero_hit(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """Answerable cases with no relevant result in the top k, as the metrics layer flags them, with the query."""
    per_case = cache.get("per_case", run_id, cur)
    flags = [c for c in per_case.column_names if c.lower().startswith("zero_hit")]
    flag = max(flags, key=lambda c: int(c.split("@")[1]) if c.split("@")[-1].isdigit() else 0, default=None)
    if flag is None:
        raise ViewError(f"metrics.per_case has no zero_hit column ({', '.join(per_case.column_names)})")
    hits = per_case.filter(pc.fill_null(pc.cast(per_case.column(flag), pa.bool_()), False))
    return with_query(cur, hits.drop_columns([c for c in flags if c != flag]))


def with_query(cur: duckdb.DuckDBPyConnection, rows: pa.Table) -> pa.Table:
    """Rows keyed by case_id, with the case's query placed second (for reading and for `/` search)."""
    if "case_id" not in rows.column_names:
        return rows
    cur.register("_rows", rows)
    try:
        keep = [c for c in rows.column_names if c not in ("case_id", "query")]
        cols = "".join(f', r."{c}"' for c in keep)
        return cur.sql(
            f"SELECT r.case_id, c.query{cols} FROM _rows r LEFT JOIN cases c USING (case_id)"
        ).to_arrow_table()
    finally:
        cur.unregister("_rows")


def triage_table(cur: duckdb.DuckDBPyConnection, fail: pa.Table, run_id: str, store: NotesStore) -> pa.Table:
    """The failures list (``fail`` from classify.failures): one row per failing case, auto and human triage."""
    cat = first_column(fail, "category", "auto_category", "defect")
    rule = first_column(fail, "rule", "rule_name", "auto_rule")
    pattern = first_column(fail, "pattern", "patterns", "hint")
    if pattern and pa.types.is_list(fail.schema.field(pattern).type):
        fail = fail.set_column(fail.column_names.index(pattern), pattern, pc.binary_join(fail.column(pattern), "; "))
        fail = fail.set_column(
            fail.column_names.index(pattern),
            pattern,
            pc.if_else(pc.equal(fail.column(pattern), ""), pa.scalar(None, pa.string()), fail.column(pattern)),
        )
    if "case_id" not in fail.column_names or cat is None:
        raise ViewError(f"classify.failures returned {', '.join(fail.column_names)}; need case_id and category")
    notes = store.to_arrow(run_id)
    cur.register("_fail", fail)
    cur.register("_notes", notes)
    agg = "string_agg(DISTINCT CAST({0} AS VARCHAR), '; ' ORDER BY CAST({0} AS VARCHAR))"
    try:
        return cur.sql(
            f"SELECT f.case_id, any_value(c.query) AS query, {agg.format('f.' + cat)} AS auto,"
            f" {agg.format('f.' + rule) if rule else 'NULL'} AS rule,"
            f" {agg.format('f.' + pattern) if pattern else 'NULL'} AS pattern,"
            " any_value(n.category) AS mine, any_value(n.status) AS status, any_value(n.note) AS note"
            " FROM _fail f LEFT JOIN cases c USING (case_id) LEFT JOIN _notes n USING (case_id)"
            " GROUP BY f.case_id ORDER BY f.case_id"
        ).to_arrow_table()
    finally:
        cur.unregister("_fail")
        cur.unregister("_notes")


def slice_case_ids(cur: duckdb.DuckDBPyConnection, dimension: str, value: Any) -> list[str]:
    """Cases of one slice of a case field (list fields such as tags match by membership)."""
    if dimension not in CASE_DIMENSIONS:
        raise ViewError(f"slice {dimension}={value}: only case fields ({', '.join(CASE_DIMENSIONS)}) drill down")
    if dimension == "tags":
        sql = "SELECT case_id FROM cases WHERE list_contains(tags, ?) ORDER BY case_id"
    else:
        sql = f"SELECT case_id FROM cases WHERE CAST({dimension} AS VARCHAR) IS NOT DISTINCT FROM ? ORDER BY case_id"
    return [r[0] for r in cur.execute(sql, [None if value is None else str(value)]).fetchall()]


def compare(
    cur: duckdb.DuckDBPyConnection, run_id: str, baseline: str, ks: tuple[int, ...] = DEFAULT_KS
) -> tuple[pa.Table, str]:
    """Per-case deltas from gate.compare, worst regression first, and its wins/losses line per metric."""
    result = call("gate", "compare", cur, run_id, baseline, ks)
    try:
        found = [getattr(result, a) for a in ("pairs", "per_case") if getattr(result, a, None) is not None]
        inner = found[0] if found else result
        deltas = as_arrow(inner)
    except ExportError as exc:
        raise ViewError(f"gate.compare: {exc}") from exc
    deltas = deltas.drop_columns([c for c in ("metric_order",) if c in deltas.column_names])
    delta = next((c for c in deltas.column_names if c in ("diff", "delta") or "delta" in c.lower()), None)
    if delta is not None:
        deltas = deltas.sort_by([(delta, "ascending"), ("case_id", "ascending")])
    summary = getattr(result, "summary", None)
    line = ""
    if isinstance(summary, pa.Table) and {"metric", "wins", "losses"} <= set(summary.column_names):
        rows = summary.to_pylist()
        overall = [r for r in rows if r.get("slice") in (None, rows[0].get("slice"))]
        line = "  ".join(f"{r['metric']} +{r['wins']}/-{r['losses']}" for r in overall)
    return lead(with_query(cur, deltas), ("case_id", "metric", "diff", "candidate", "baseline")), line
