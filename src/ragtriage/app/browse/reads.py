"""Store access and the session's cache of core answers: :class:`StoreReader`, :class:`RunCache` and the
whole-run fetchers it keeps, :func:`core`/:func:`require` around every core call, and the SQL/Arrow helpers the
other modules share (:func:`over`, :func:`with_query`, :func:`natural_order`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.checks.leakage import leakage as core_leakage
from ragtriage.checks.staleness import stale_results
from ragtriage.classify import (
    FailureSummary,
    RunClassification,
    failure_list,
    failure_summary,
    judging_k,
    run_classification,
)
from ragtriage.classify.stored import is_fresh
from ragtriage.metrics import summary_cache
from ragtriage.metrics.context import DEFAULT_KS
from ragtriage.metrics.per_case import per_case as core_per_case
from ragtriage.store import StoreError, connect

#: Measures a case screen, the Compare view and the overview histogram offer, all at the run's own k.
CASE_MEASURES = ("nDCG", "P", "R", "RR", "AP")
T = TypeVar("T")


class ViewError(Exception):
    """A view cannot be filled: the sentence says which core function and why."""


def core(name: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a core function; its error becomes a ViewError naming it (the view shows it, the app goes on)."""
    try:
        return fn(*args, **kwargs)
    except ViewError:
        raise
    except Exception as exc:  # the core said no (bad run, missing data): show its words
        raise ViewError(f"{name}: {type(exc).__name__}: {exc}") from exc


def require(table: pa.Table, columns: Sequence[str], source: str) -> pa.Table:
    """``table`` if it has ``columns`` (the core's declared schema), else a ViewError naming what is missing."""
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ViewError(f"{source} returned no {', '.join(missing)} (columns: {', '.join(table.column_names)})")
    return table


class StoreReader:
    """Short-lived read-only connections to the store, one per piece of work, closed straight after.

    Holding no connection between reads lets ``ragtriage load`` write the store while the TUI is open (DuckDB
    admits one writing process and no reader while it writes); whole-run answers are kept in :class:`RunCache`,
    so a case move costs one open (a few ms) and the case's own queries.

    While the app's own background classification writes (:meth:`writing`), reads take a cursor of its writable
    connection instead: DuckDB refuses a read-only connection to a file this process holds writable. The switch
    waits for the read-only connections open at that moment to close; reads never wait for the writer's work.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._turn = threading.Condition()
        self._open = 0  # connections and cursors handed out and not closed yet
        self._want_write = False
        self._writer: duckdb.DuckDBPyConnection | None = None

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._turn:
            while self._want_write and self._writer is None:
                self._turn.wait()
            writer = self._writer
            self._open += 1
        try:
            if writer is not None:
                cur = writer.cursor()
                try:
                    yield cur
                finally:
                    cur.close()
                return
            con = connect(self.path, read_only=True)
            try:
                yield con
            finally:
                con.close()
        finally:
            with self._turn:
                self._open -= 1
                self._turn.notify_all()

    @contextmanager
    def writing(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A writable connection for this process's background work; reads share it until it is closed (after
        the reads using it end). Raises ``StoreLocked``/``StoreError`` as :func:`connect` does."""
        with self._turn:
            if self._want_write:
                raise StoreError("the store is already being written by this app")
            self._want_write = True
            while self._open:
                self._turn.wait()
        try:
            con = connect(self.path)
        except BaseException:
            with self._turn:
                self._want_write = False
                self._turn.notify_all()
            raise
        with self._turn:
            self._writer = con
            self._turn.notify_all()
        try:
            yield con
        finally:
            with self._turn:
                self._writer = None  # new reads open their own connection again once this one is closed
                while self._open:
                    self._turn.wait()
                con.close()
                self._want_write = False
                self._turn.notify_all()


def measure_ks(k: int) -> tuple[int, ...]:
    """The cutoffs a run is read at: the usual 3, 5, 10 and the run's own k."""
    return tuple(sorted({*DEFAULT_KS, k}))


class RunCache:
    """Core answers kept for the session (per run: k, per-case metrics, leakage, the failure list, ...), fetched
    once and shared by workers. A failure is cached too, so a core error is reported once, not retried on every
    case. Keys are tuples: (kind, run_id) for :data:`FETCHERS`, any tuple for :meth:`remember`."""

    def __init__(self, k: int | None = None) -> None:
        #: the cutoff a user asked (``tui --k``): every run is read and judged at it instead of its own k
        self.k_asked = k
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._values: dict[tuple[Any, ...], Any] = {}

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def has(self, kind: str, run_id: str) -> bool:
        """Whether the run's answer of ``kind`` is kept (a read that would take it, rather than compute)."""
        with self._lock:
            return (kind, run_id) in self._values

    def forget(self, run_id: str, kinds: Sequence[str]) -> None:
        """Drop the run's answers of ``kinds`` (they changed: its classification was stored)."""
        with self._lock:
            for kind in kinds:
                self._values.pop((kind, run_id), None)

    def remember(self, key: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """``compute()`` once per key; a second asker waits for the first instead of computing it again."""
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            hit = self._values.get(key)
            if hit is None:
                try:
                    hit = compute()
                except ViewError as exc:
                    hit = exc
                self._values[key] = hit
        if isinstance(hit, ViewError):
            raise hit
        return hit

    def get(self, kind: str, run_id: str, cur: duckdb.DuckDBPyConnection) -> Any:
        """The answer of :data:`FETCHERS`[kind] for the run."""
        return self.remember((kind, run_id), lambda: FETCHERS[kind](cur, run_id, self))

    def typed(self, kind: str, run_id: str, cur: duckdb.DuckDBPyConnection, cls: type[T]) -> T:
        """:meth:`get`, checked to be a ``cls``."""
        value = self.get(kind, run_id, cur)
        assert isinstance(value, cls)
        return value

    def table(self, kind: str, run_id: str, cur: duckdb.DuckDBPyConnection) -> pa.Table:
        return self.typed(kind, run_id, cur, pa.Table)

    def k(self, run_id: str, cur: duckdb.DuckDBPyConnection) -> int:
        return self.typed("k", run_id, cur, int)

    def fresh(self, run_id: str, cur: duckdb.DuckDBPyConnection) -> bool:
        return self.typed("fresh", run_id, cur, bool)

    def classification(self, run_id: str, cur: duckdb.DuckDBPyConnection) -> RunClassification:
        return self.typed("classification", run_id, cur, RunClassification)

    def failure_summary(self, run_id: str, cur: duckdb.DuckDBPyConnection) -> FailureSummary:
        return self.typed("failure_summary", run_id, cur, FailureSummary)


FAILURE_COLUMNS = ("case_id", "failure", "category", "rule", "evidence", "patterns", "k")
FAILURE_LIST_COLUMNS = ("case_id", "query", "category", "rule", "patterns")
LEAK_COLUMNS = ("case_id", "stage", "rank", "unit_id", "rule", "detail")
LOCATION_COLUMNS = ("case_id", "unit_id", "grade", "location", "final_rank", "candidate_rank", "permitted")


def _k(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> int:
    """The k the run is judged at (``--k``, else the run's own: run.json's, else 10): every per-case figure, the
    overview's and the Compare view's are read at it."""
    return core("classify.judging_k", judging_k, cur, run_id, cache.k_asked)


def _fresh(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> bool:
    """Whether the run's classification is stored and fresh: then one case's failures are read from the store
    (milliseconds); else the run is classified once (:func:`_classification`) and every case read from that."""
    return core("classify.stored.is_fresh", is_fresh, cur, run_id, cache.k(run_id, cur))


def _classification(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> RunClassification:
    """The whole run's classification (stored when fresh, else computed once here): only a store whose stored
    rows are out of date needs it."""
    found = core("classify.run_classification", run_classification, cur, run_id, k=cache.k(run_id, cur))
    require(found.rows, FAILURE_COLUMNS, "classify.run_classification")
    return found


def _failure_summary(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> FailureSummary:
    """Failures per category and their cost (what ``failures --summary`` prints): stored counts, no evidence."""
    return core("classify.failure_summary", failure_summary, cur, run_id, k=cache.k(run_id, cur))


def _failure_list(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache, partial: bool = False) -> pa.Table:
    """One row per failing case (``classify.failure_list``: stored rows without their evidence)."""
    listed = core("classify.failure_list", failure_list, cur, run_id, k=cache.k(run_id, cur), partial=partial)
    return require(listed, FAILURE_LIST_COLUMNS, "classify.failure_list")


def partial_failure_list(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """The failure list of the chunks classified so far, while the app classifies the run in the background (not
    kept: the next chunk adds to it); the caller says beside it that it is partial."""
    return _failure_list(cur, run_id, cache, partial=True)


#: The run's answers that change when its classification is stored (forgotten then, read again).
CLASSIFIED_KINDS = ("fresh", "classification", "failure_summary", "failure_list")


def _leakage(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    return require(core("checks.leakage", core_leakage, cur, run_id), LEAK_COLUMNS, "checks.leakage")


def _per_case(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """Every case's measures at 3, 5, 10 and the run's k, without the result counts (a second pass over every
    result row): the overview's histogram, the slices, and the summary when it is not cached. Read from the
    per-case cache when the run's k is one of 3, 5, 10 (the load fills it; a miss computes and keeps it)."""
    ks = measure_ks(cache.k(run_id, cur))
    cached = core("metrics.per_case", summary_cache.per_case_kept, cur, run_id, ks)  # computed once per store state
    table = cached if cached is not None else core("metrics.per_case", core_per_case, cur, run_id, ks, counts=False)
    return require(table, ("case_id",), "metrics.per_case")


def _per_case_counts(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """As :func:`_per_case` with the result counts the zero-hit list shows."""
    table = core("metrics.per_case", core_per_case, cur, run_id, (cache.k(run_id, cur),))
    return require(table, ("case_id", "n_relevant", "n_retrieved"), "metrics.per_case")


def _stale(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    stale = core("checks.stale_results", stale_results, cur, run_id)
    return require(stale, ("case_id", "stage", "rank", "reason"), "checks.stale_results")


FETCHERS: dict[str, Callable[[duckdb.DuckDBPyConnection, str, RunCache], Any]] = {
    "k": _k,
    "fresh": _fresh,
    "classification": _classification,
    "failure_summary": _failure_summary,
    "failure_list": _failure_list,
    "leakage": _leakage,
    "per_case": _per_case,
    "per_case_counts": _per_case_counts,
    "stale": _stale,
}
#: Whole-run answers the case screen reads; fetched in the background once the overview is filled, so the first
#: case a person opens does not wait for them.
CASE_SCREEN_KINDS = ("leakage", "stale", "fresh")


def over(
    cur: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None, **tables: pa.Table
) -> pa.Table:
    """``sql`` on the worker's cursor with ``tables`` registered under their names for this statement alone."""
    for name, table in tables.items():
        cur.register(name, table)
    try:
        return cur.sql(sql, params=params).to_arrow_table()
    finally:
        for name in tables:
            cur.unregister(name)


def with_query(cur: duckdb.DuckDBPyConnection, rows: pa.Table) -> pa.Table:
    """Rows keyed by case_id with the case's query as the last column (free text takes the width left)."""
    cols = ", ".join(f'r."{c}"' for c in rows.column_names if c != "query")
    return over(cur, f"SELECT {cols}, c.query FROM _rows r LEFT JOIN cases c USING (case_id)", _rows=rows)


def natural_order(table: pa.Table, column: str, *, descending: bool = False) -> pa.Table:
    """Rows sorted by ``column`` in natural order (``q2`` before ``q10``): text before the first number, the
    number as an integer, then the rest. Arrow compute only: no Python per row."""
    col = pc.cast(table.column(column), pa.string())
    parts = pc.extract_regex(pc.fill_null(col, ""), r"^(?P<head>\D*)(?P<num>\d*)(?P<tail>.*)$")
    digits = pc.struct_field(parts, "num")
    number = pc.cast(pc.if_else(pc.equal(digits, ""), None, pc.utf8_slice_codeunits(digits, 0, 18)), pa.int64())
    keyed = table.append_column("__h", pc.struct_field(parts, "head")).append_column("__n", number)
    keyed = keyed.append_column("__t", pc.struct_field(parts, "tail"))
    order = "descending" if descending else "ascending"
    keyed = keyed.sort_by([("__h", order), ("__n", order), ("__t", order)])
    return keyed.drop_columns(["__h", "__n", "__t"])
