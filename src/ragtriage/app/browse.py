"""What the TUI shows, read in worker threads: typed reads over the core functions imported directly (no textual,
no SQL in ``tui/``, no figure computed here).

Each read takes a DuckDB cursor (one per worker thread) and returns an Arrow table whose columns are named here,
or a small dataclass. The core's answers have declared columns (``classify.failures``, ``checks.leakage``,
``metrics.per_case``, ``metrics.slices``, ``gate.compare.paired_matrix``); :func:`require` checks the ones
read here, so a changed core schema is a clear message, not a guessed column. A core error is raised as
:class:`ViewError` with the core's words, which the view prints in place of its table.

One case in full (:func:`case_details`) reads only that case's rows, so a case opens in the same time on a large
store as on the sample; leakage and staleness are whole-run answers kept by :class:`RunCache`. A section whose
core call fails says so in ``CaseDetail.errors``; the rest of the case still shows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import non_null_values, row_numbers, rows_where_in, table_of
from ragtriage.checks.leakage import NOT_APPLICABLE, Coverage, coverage, unchecked_cases
from ragtriage.checks.leakage import leakage as core_leakage
from ragtriage.checks.staleness import stale_results
from ragtriage.checks.units import stage_order
from ragtriage.classify import (
    CostReport,
    FailureSummary,
    Progress,
    RunClassification,
    failure_list,
    failure_summary,
    judging_k,
    pending,
    progress,
    run_classification,
    unit_locations,
)
from ragtriage.classify import failures as core_failures
from ragtriage.classify.classify_run import failure_source
from ragtriage.classify.stored import is_fresh
from ragtriage.experiments.explain import EXPLAINED_SCHEMA, explain_drops
from ragtriage.experiments.runs_table import measure_names
from ragtriage.gate.compare import SEED, TEST_RESAMPLES, PairStats, pair_stats, paired_matrix
from ragtriage.gate.sources import paired_version
from ragtriage.metrics import summary_cache
from ragtriage.metrics.context import DEFAULT_KS, labels_header, over_arrow, request_in_use
from ragtriage.metrics.measures import parse_measure
from ragtriage.metrics.per_case import per_case as core_per_case
from ragtriage.metrics.slices import CASE_FIELDS, EVIDENCE_FIELDS, NONE, membership_sql
from ragtriage.metrics.slices import slices as core_slices
from ragtriage.metrics.summary import summarize
from ragtriage.notes import Note, NotesStore
from ragtriage.store import StoreError, connect, current_dataset_version, run_ids
from ragtriage.store import k_statement as store_k_statement
from ragtriage.store.corpus_manifest import COMPLETE_SQL
from ragtriage.store.dedup import occurrence

DIMENSIONS = CASE_FIELDS + EVIDENCE_FIELDS
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


def one_row(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> dict[str, Any] | None:
    rows = cur.sql(sql, params=params).to_arrow_table().to_pylist()
    return rows[0] if rows else None


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


def _failure_list(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """One row per failing case (``classify.failure_list``: stored rows without their evidence)."""
    listed = core("classify.failure_list", failure_list, cur, run_id, k=cache.k(run_id, cur))
    return require(listed, FAILURE_LIST_COLUMNS, "classify.failure_list")


def partial_failure_list(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """The failure list of the chunks classified so far, while the app classifies the run in the background (not
    kept: the next chunk adds to it); the caller says beside it that it is partial."""
    listed = core("classify.failure_list", failure_list, cur, run_id, k=cache.k(run_id, cur), partial=True)
    return require(listed, FAILURE_LIST_COLUMNS, "classify.failure_list")


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


def identity(
    cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's row and the current dataset's identity (straight from the store); with ``cache``, the run's k is
    the one the views read, with its source (``8 (run.json)``, ``10 (default)``, ``4 (--k)``), and the dataset's
    threshold and population are the ones in use (``tui --threshold``, ``--cases``)."""
    run = one_row(cur, "SELECT * EXCLUDE (manifest, system) FROM runs WHERE run_id = ?", [run_id])
    if run is None:
        raise ViewError(f"unknown run {run_id!r}; loaded runs: {', '.join(run_ids(cur)) or 'none'}")
    if cache is not None:
        run["k"] = k_statement(cur, run_id, cache)
    dataset = (
        one_row(
            cur,
            "SELECT name, version, dataset_version, unit, relevance_threshold, grade_min, grade_max, corpus_snapshot"
            " FROM current_dataset",
            [],
        )
        or {}
    )
    dataset.update(labels_header(cur))  # the TUI shows the people's labels; say how many judged ones are stored
    if cache is not None:
        asked = request_in_use()
        dataset["cases"] = asked.cases
        if asked.threshold is not None:
            dataset["relevance_threshold"] = f"{asked.threshold} (--threshold)"
    return run, dataset


SUMMARY_COLUMNS = ("name", "mean", "median", "p10", "min", "ci_low", "ci_high", "zero_hit_rate", "n")
SUMMARY_CONTEXT = ("threshold", "gain", "unit", "stage")


@dataclass(frozen=True)
class Summary:
    """``metrics.summarize`` as the overview shows it: the columns that fit 80 wide and the context every figure
    needs (threshold, gain, unit, stage), which is the same on every row and so goes to the title."""

    table: pa.Table
    context: str
    #: True when the table holds no interval yet (``interval=False`` on a cache miss): the full one follows
    interval_pending: bool = False


def summary(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    db_path: str | Path | None = None,
    cache: RunCache | None = None,
    *,
    interval: bool = True,
) -> Summary:
    """With ``db_path`` the full table is read from / written to :mod:`summary_cache`; on a miss, with ``cache``
    the run's per-case table is computed once for the summary, the histogram and the slices. ``interval=False``:
    on a miss, the table without its bootstrap intervals (most of the cost once the per-case values are known),
    not kept in the cache."""
    k = cache.k(run_id, cur) if cache is not None else None
    own = k is None or k in DEFAULT_KS  # at 3, 5, 10 (the run's k among them): the cached table holds it
    full = summary_cache.load(cur, run_id) if db_path is not None and own else None
    pending = False
    if full is None:
        ks: tuple[int, ...] = DEFAULT_KS
        if own:
            per_case = summary_per_case(cur, run_id, cache)
        else:
            assert cache is not None and k is not None
            per_case, ks = cache.table("per_case", run_id, cur), measure_ks(k)
        full = core("metrics.summarize", summarize, cur, run_id, ks, per_case=per_case, interval=interval).to_arrow()
        pending = not interval
        if db_path is not None and interval and own:
            summary_cache.save(cur, run_id, full)
    require(full, SUMMARY_COLUMNS, "metrics.summarize")
    context = ""
    if full.num_rows:
        first = full.slice(0, 1).to_pylist()[0]
        context = " ".join(f"{c}={first[c]}" for c in SUMMARY_CONTEXT if c in first)
    return Summary(full.select(list(SUMMARY_COLUMNS)), context, pending)


def k_statement(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> str:
    """The cutoff the views judge at and where it came from (``store.k_statement``)."""
    cache.k(run_id, cur)  # the run exists (a ViewError names it otherwise)
    return core("store.k_statement", store_k_statement, cur, run_id, cache.k_asked)


def summary_per_case(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache | None) -> pa.Table | None:
    """The per-case values the summary needs: at its own cutoffs from the per-case cache (computed and kept on a
    miss, cheaper than at the run's k as well), else the run's table shared with the histogram and slices. With
    ``cache``, computed once per session (the app starts it early, as soon as a store it built is written)."""

    def kept() -> pa.Table | None:
        return core("metrics.per_case", summary_cache.per_case_kept, cur, run_id, DEFAULT_KS)

    def kept_or_none() -> pa.Table:
        table = kept()
        return _NO_TABLE if table is None else table

    if cache is None:
        return kept()
    found = cache.remember(("summary_per_case", run_id), kept_or_none)
    return found if found is not _NO_TABLE else cache.table("per_case", run_id, cur)


_NO_TABLE = pa.table({})


@dataclass(frozen=True)
class Distribution:
    """Per-case values of one measure (``metrics.per_case``), binned for drawing only."""

    measure: str
    counts: list[int]
    n: int


def distribution(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache, family: str = "nDCG") -> Distribution:
    k = cache.k(run_id, cur)
    name = f"{family}@{k}"
    per_case = require(cache.table("per_case", run_id, cur), (name,), "metrics.per_case")
    values = non_null_values(per_case.column(name), np.float64)
    counts = np.histogram(values, bins=10, range=(0.0, 1.0))[0].tolist()
    return Distribution(name, [int(c) for c in counts], len(values))


@dataclass(frozen=True)
class Categories:
    """Failures per automatic category and what each costs the run (``classify.failure_summary``: the figures
    ``failures --summary`` prints, read from the stored classification)."""

    counts: pa.Table  # category, failures, cost (NULL for security: a hard failure, never a measure)
    costs: CostReport


def categories(found: FailureSummary) -> Categories:
    """Failures per category beside the category's cost, most failures first."""
    cost = {c.category: c.cost for c in found.costs.costs}
    names = sorted(found.by_category, key=lambda c: (-found.by_category[c], c))
    counts = pa.table(
        {
            "category": pa.array(names, pa.string()),
            "failures": pa.array([found.by_category[c] for c in names], pa.int64()),
            "cost": pa.array([cost.get(c) for c in names], pa.float64()),
        }
    )
    return Categories(counts, found.costs)


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


def triage_table(cur: duckdb.DuckDBPyConnection, listed: pa.Table, run_id: str, store: NotesStore) -> pa.Table:
    """The failures list: one row per failing case (``classify.failure_list``), its automatic categories and
    rules beside the person's triage, ids in natural order."""
    rows = over(
        cur,
        """SELECT f.case_id, n.status, n.category AS mine, f.rule, f.query, f.patterns AS pattern, n.note,
                  f.category AS _auto
           FROM _list f LEFT JOIN _notes n USING (case_id)""",
        _list=listed,
        _notes=store.to_arrow(run_id),
    )
    return natural_order(rows, "case_id")


def failure_units(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """(case_id, _units): each failing case's evidence as text, so `/` finds a case by any unit id its failures
    name. Fetched when a search starts, not with the list: it reads every failure's evidence."""
    k = cache.k(run_id, cur)
    units = "SELECT case_id, string_agg(CAST(evidence AS VARCHAR), ' ') AS _units FROM {} GROUP BY case_id"
    if cache.fresh(run_id, cur):
        return over(cur, units.format(failure_source(cur, run_id, k)), {"run_id": run_id, "k": k})
    return over(cur, units.format("_cls"), _cls=cache.classification(run_id, cur).rows.select(["case_id", "evidence"]))


def leakage_by_case(cur: duckdb.DuckDBPyConnection, leaks: pa.Table) -> pa.Table:
    """One row per leaking case: leaked units in the final list and in the candidates, the rules broken; cases
    by the first stage they leak in (``checks.units.STAGE_ORDER``: final first, as ``check`` lists them), then
    natural id order."""
    rows = over(
        cur,
        f"""SELECT case_id,
                  count(DISTINCT unit_id) FILTER (WHERE stage = 'final') AS final,
                  count(DISTINCT unit_id) FILTER (WHERE stage <> 'final') AS candidate,
                  string_agg(DISTINCT rule, ', ' ORDER BY rule) AS rules,
                  string_agg(DISTINCT unit_id, ' ') AS _units,
                  min({stage_order("stage")}) AS __stage
           FROM _leaks GROUP BY case_id""",
        _leaks=leaks,
    )
    rows = natural_order(with_query(cur, rows), "case_id")
    return rows.sort_by([("__stage", "ascending")]).drop_columns(["__stage"])


@dataclass(frozen=True)
class Leak:
    """One leaked result of a case: where it is, and every reason (rule and the check's sentence) in full."""

    stage: str
    rank: int
    unit_id: str
    reasons: list[str]


def case_leaks(leaks: pa.Table, case_id: str) -> list[Leak]:
    """The case's leaked results in the order ``checks.leakage`` gives them (``LEAK_ORDER``: final stage first,
    then by rank), a handful per case."""
    mine = rows_where_in(leaks, "case_id", [case_id])
    grouped: dict[tuple[str, int, str], list[str]] = {}
    for r in mine.select(["stage", "rank", "unit_id", "rule", "detail"]).to_pylist():
        unit, detail = str(r["unit_id"]), str(r["detail"])
        detail = detail.removeprefix(f"{unit}: ")  # the unit is on the line already
        grouped.setdefault((str(r["stage"]), int(r["rank"]), unit), []).append(f"{r['rule']}: {detail}")
    return [Leak(s, rank, unit, reasons) for (s, rank, unit), reasons in grouped.items()]


def zero_hit(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> tuple[pa.Table, int]:
    """Answerable cases with no relevant result in the run's top k (``zero_hit@k`` of metrics.per_case)."""
    k = cache.k(run_id, cur)
    flag = f"zero_hit@{k}"
    per_case = require(cache.table("per_case_counts", run_id, cur), (flag,), "metrics.per_case")
    hits = per_case.filter(pc.fill_null(per_case.column(flag), False))
    rows = with_query(cur, hits.select(["case_id", "n_relevant", "n_retrieved"]))
    rows = rows.rename_columns(["case_id", "relevant", "retrieved", "query"])
    return natural_order(rows, "case_id"), k


@dataclass(frozen=True)
class Slices:
    """``metrics.slices`` for one dimension with the columns that are the same on every row lifted out."""

    table: pa.Table
    measure: str
    threshold: int | None


SLICE_LEAD = ("slice_value", "n", "mean", "median", "p10", "zero_hit_rate", "ci_low", "ci_high", "n_without_relevant")


def slices(cur: duckdb.DuckDBPyConnection, run_id: str, dimension: str, cache: RunCache) -> Slices:
    """``metrics.slices`` at the run's k, kept per (run, dimension): the overview's slice bars and the Slices
    view read one answer."""
    k = cache.k(run_id, cur)
    ks = measure_ks(k)

    def computed() -> pa.Table:
        kept = summary_cache.cached_slices(cur, run_id, dimension, ks, k)  # `ragtriage load` kept the first one
        if kept is not None:
            return kept
        per_case = cache.table("per_case", run_id, cur)
        return core("metrics.slices", core_slices, cur, run_id, by=dimension, ks=ks, k=k, per_case=per_case)

    table = cache.remember(("slices", run_id, dimension), computed)
    require(table, (*SLICE_LEAD, "measure", "threshold", "gain"), "metrics.slices")
    first = table.slice(0, 1).to_pylist()
    measure = f"{first[0]['measure']} grade>={first[0]['threshold']} {first[0]['gain']}" if first else ""
    threshold = int(first[0]["threshold"]) if first else None
    rest = [c for c in table.column_names if c not in SLICE_LEAD and c not in ("dimension", "measure", "threshold")]
    rest = [c for c in rest if c not in ("gain", "case_ids")]
    return Slices(table.select([*SLICE_LEAD, *rest]), measure, threshold)


def slice_case_ids(cur: duckdb.DuckDBPyConnection, dimension: str, value: Any, threshold: int) -> list[str]:
    """Cases of one slice, by the metrics layer's own membership rule (tags by membership, evidence fields by
    the relevant units' values, ``(none)`` for no value)."""
    if dimension not in DIMENSIONS:
        raise ViewError(f"slice {dimension}: use one of {', '.join(DIMENSIONS)}")
    sql = f"SELECT DISTINCT case_id FROM ({membership_sql(dimension, threshold)}) WHERE coalesce(v, ?) = ?"
    return [str(r[0]) for r in cur.execute(sql, [NONE, str(value)]).fetchall()]


@dataclass(frozen=True)
class RunsMatrix:
    """Per-case values of every compared run at the open run's k, computed once (the measure key re-selects).

    ``runs`` is the baseline, the open run, then every other loaded run of the same dataset version; the cases are
    those ``gate.compare.paired_matrix`` pairs (relevant units, a value in every run), so the list, the
    CLI's ``compare --runs`` and the report agree on the population.
    """

    runs: tuple[str, ...]
    measures: tuple[str, ...]
    case_ids: pa.Array
    values: npt.NDArray[np.float64]  # cases x runs x measures


def runs_matrix(
    cur: duckdb.DuckDBPyConnection, run_id: str, baseline: str, loaded: Sequence[str], cache: RunCache
) -> RunsMatrix:
    k = cache.k(run_id, cur)
    runs = [baseline, run_id]
    for other in loaded:
        if other in runs:
            continue
        try:
            paired_version(cur, other, baseline)
        except StoreError:
            continue  # loaded against another dataset version: not comparable case by case
        runs.append(other)
    measures = measure_names([f"{family}@{k}" for family in CASE_MEASURES])
    case_ids, values = core("gate.paired_matrix", paired_matrix, cur, runs, measures, None)
    return RunsMatrix(tuple(runs), measures, case_ids, values)


@dataclass(frozen=True)
class CompareView:
    """One measure of a :class:`RunsMatrix` as a list: one row per paired case with each run's value and the open
    run's Δ against the baseline, worst regression first. ``runs`` name the value columns in table order;
    ``stats`` are the open run's against the baseline from ``gate.compare.pair_stats`` (wins/ties/losses,
    mean Δ, interval, p-value), as ``compare`` states them."""

    table: pa.Table
    measure: str
    runs: tuple[str, ...]
    stats: PairStats
    deltas: list[float]


def compare_view(cur: duckdb.DuckDBPyConnection, matrix: RunsMatrix, family: str) -> CompareView:
    j = [parse_measure(m).name for m in matrix.measures].index(family)
    values = matrix.values[:, :, j]
    diff = values[:, 1] - values[:, 0]
    columns: dict[str, npt.NDArray[Any]] = {"case_id": np.asarray(matrix.case_ids.to_pylist(), dtype=object)}
    fields = [("case_id", pa.string())]
    for i in range(len(matrix.runs)):  # baseline, the open run and its Δ, then the other runs
        columns[f"r{i}"] = values[:, i]
        fields.append((f"r{i}", pa.float64()))
        if i == 1:
            columns["delta"] = diff
            fields.append(("delta", pa.float64()))
    rows = with_query(cur, table_of(columns, pa.schema(fields)))
    rows = natural_order(rows, "case_id").sort_by([("delta", "ascending")])
    shown = non_null_values(rows.column("delta"), np.float64)
    (stats,) = pair_stats(values[:, 1:2], values[:, 0:1], seed=SEED, n_resamples=TEST_RESAMPLES)
    return CompareView(rows, matrix.measures[j], matrix.runs, stats, shown.tolist())


@dataclass(frozen=True)
class CompareCauses:
    """The cause of each case of a :class:`CompareView` whose measure dropped: ``table`` is the view's table
    with a ``cause`` column after Δ (empty where the case did not drop), ``causes`` (case_id, cause, why) of the
    dropped cases, ``counts`` the cases per cause that occur, in the order of precedence."""

    table: pa.Table
    causes: pa.Table
    counts: dict[str, int]

    def why(self, case_id: str | None) -> tuple[str, str] | None:
        """(cause, sentence) of one case, None when it did not drop."""
        if case_id is None:
            return None
        i = pc.index(self.causes.column("case_id"), pa.scalar(case_id, pa.string())).as_py()
        if i < 0:
            return None
        return str(self.causes.column("cause")[i].as_py()), str(self.causes.column("why")[i].as_py())


def compare_causes(cur: duckdb.DuckDBPyConnection, view: CompareView) -> CompareCauses:
    """``experiments.explain`` of the open run against the baseline over the view's own cases, measure and k."""
    baseline, run = view.runs[0], view.runs[1]
    drops = view.table.select(["case_id", "delta"])
    drops = drops.append_column("measure", pa.repeat(pa.scalar(view.measure, pa.string()), drops.num_rows))
    version = current_dataset_version(cur)
    found = core("experiments.explain_drops", explain_drops, cur, run, baseline, drops, [view.measure], (version,) * 2)
    causes = require(found.explained, EXPLAINED_SCHEMA.names, "experiments.explain_drops").select(
        ["case_id", "cause", "why"]
    )
    names = view.table.column_names
    at = names.index("delta") + 1
    cols = [f'v."{c}"' for c in names]
    select = ", ".join([*cols[:at], "coalesce(c.cause, '') AS cause", *cols[at:]])
    numbered = view.table.append_column("_row", row_numbers(view.table.num_rows))
    table = over_arrow(f"SELECT {select} FROM v LEFT JOIN c USING (case_id) ORDER BY v._row", v=numbered, c=causes)
    counts = {str(r["cause"]): int(r["cases"]) for r in found.counts.to_pylist() if r["cases"]}
    return CompareCauses(table, causes, counts)


def leak_counts(leaks: pa.Table) -> tuple[int, int]:
    """(leaking cases, leaked final-stage results) for the overview's banner."""
    final = leaks.filter(pc.equal(leaks.column("stage"), "final"))
    cases = pc.count_distinct(leaks.column("case_id")).as_py()
    keys = final.group_by(["case_id", "rank"]).aggregate([]).num_rows if final.num_rows else 0
    return int(cases or 0), int(keys)


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


class StoreState(NamedTuple):
    """What the app reads from its store before a view opens."""

    runs: list[str]
    run_id: str
    baseline: str | None
    #: Runs whose classification this app stores in the background, and how far each is
    classifying: dict[str, Progress]


def store_state(db: Path, run_id: str | None, baseline: str | None) -> StoreState:
    """The runs, the one to open (``run_id``, else the newest) and its baseline, and the runs left to classify
    (a short read-only open)."""
    con = connect(db, read_only=True)
    try:
        runs = run_ids(con)
        newest = con.execute(
            "SELECT run_id FROM runs ORDER BY created_at DESC NULLS LAST, loaded_at DESC, run_id LIMIT 1"
        ).fetchone()
        classifying = {rid: progress(con, rid) for rid in pending(con)}
    finally:
        con.close()
    if not runs:
        raise StoreError(f"{db}: no run loaded; load one with `ragtriage load --db {db} --run DIR`")
    for name, value in (("run", run_id), ("baseline", baseline)):
        if value is not None and value not in runs:
            raise StoreError(f"unknown {name} {value!r}; loaded runs: {', '.join(runs)}")
    opened = run_id or (newest[0] if newest else runs[-1])
    return StoreState(runs, opened, baseline or next((r for r in runs if r != opened), None), classifying)


def case_index(cur: duckdb.DuckDBPyConnection) -> list[str]:
    """Every case id of the current dataset in natural order (the command palette's)."""
    table = cur.sql("SELECT case_id FROM cases").to_arrow_table()
    return [str(c) for c in natural_order(table, "case_id").column(0).to_pylist()]


# The cases' ranked lists with what the flags need: grade (unjudged when NULL), the document's status, whether
# the unit is in the corpus snapshot (unknown, so never flagged, without a manifest), and whether it repeats a
# unit ranked higher in the same list; unknown too with a manifest derived from traces, which lists only what was
# retrieved (the metrics keep only the first occurrence).
RESULTS_SQL = f"""
WITH r AS (
    SELECT case_id, stage, rank, unit_id, score, chunk_id, snippet, metadata->>'trace_id' AS trace_id,
           {occurrence("case_id, stage")} > 1 AS duplicate
    FROM results WHERE run_id = $run_id AND case_id IN (SELECT unnest($case_ids::VARCHAR[]))
), d AS (
    SELECT r.case_id, r.stage, r.rank, doc.title, doc.status AS doc_status, doc.text
    FROM r JOIN documents doc ON doc.unit_id = r.unit_id AND (r.chunk_id IS NULL OR doc.chunk_id IS NULL
                                                             OR doc.chunk_id = r.chunk_id)
    QUALIFY row_number() OVER (PARTITION BY r.case_id, r.stage, r.rank ORDER BY doc.position) = 1
)
SELECT r.case_id, r.stage, r.rank, r.unit_id, q.grade, r.score, r.duplicate, d.title, d.doc_status,
       d.stage IS NULL AND {COMPLETE_SQL} AS not_in_corpus,
       coalesce(r.snippet, d.text) AS passage, r.trace_id
FROM r LEFT JOIN (SELECT case_id, unit_id, grade FROM qrels WHERE case_id IN (SELECT unnest($case_ids::VARCHAR[]))) q
     USING (case_id, unit_id)
LEFT JOIN d USING (case_id, stage, rank)
ORDER BY r.case_id, r.stage = 'final' DESC, r.rank
"""

EVENTS_SQL = """
SELECT case_id, first(latency_ms) AS latency_ms, first(timed_out) AS timed_out, first(empty) AS empty,
       first(fallback) AS fallback, first(status) AS status, first(error) AS error
FROM events WHERE run_id = $run_id AND case_id IN (SELECT unnest($case_ids::VARCHAR[])) GROUP BY case_id
"""


@dataclass
class CaseDetail:
    """Everything the case screen shows; ``errors`` holds the sections whose core call failed."""

    run_id: str
    k: int
    case: dict[str, Any]
    results: list[dict[str, Any]]
    baseline: str | None = None
    events: dict[str, Any] | None = None
    leaks: list[Leak] = field(default_factory=list)
    stale: dict[tuple[str, int], str] = field(default_factory=dict)
    relevant: set[str] = field(default_factory=set)
    locations: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    baseline_metrics: dict[str, Any] = field(default_factory=dict)
    note: Note | None = None
    errors: dict[str, str] = field(default_factory=dict)

    def leaked_at(self) -> dict[tuple[str, int], Leak]:
        return {(leak.stage, leak.rank): leak for leak in self.leaks}


def case_rows(table: pa.Table, case_id: str) -> list[dict[str, Any]]:
    """The rows of one case from a whole-run table (a handful)."""
    rows: list[dict[str, Any]] = rows_where_in(table, "case_id", [case_id]).to_pylist()
    return rows


def by_case(table: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """A table of several cases' rows as lists per case (rows keep their order)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        out.setdefault(str(row["case_id"]), []).append(row)
    return out


def case_failures(
    cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str], cache: RunCache
) -> dict[str, list[dict[str, Any]]]:
    """The cases' failure rows, read for those cases alone: from the store when the stored classification is
    fresh or their chunk is stored, else classified on the spot for their own case range (``classify.failures``);
    a run classified whole in memory before (a store the app cannot write) is read from that."""
    if not cache.fresh(run_id, cur) and cache.has("classification", run_id):
        rows = cache.classification(run_id, cur).rows
        return by_case(rows_where_in(rows, "case_id", case_ids))
    rows = core("classify.failures", core_failures, cur, run_id, k=cache.k(run_id, cur), case_ids=case_ids)
    return by_case(require(rows, FAILURE_COLUMNS, "classify.failures"))


def case_metrics(cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str], k: int) -> dict[str, Any]:
    """Each case's measures in ``run_id`` at ``k`` (none for a case without a label: it has no measure)."""
    table = core("metrics.per_case", core_per_case, cur, run_id, (k,), counts=False, cases=case_ids)
    return {str(r["case_id"]): r for r in table.to_pylist()}


def case_detail(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_id: str,
    store: NotesStore,
    cache: RunCache,
    baseline: str | None = None,
) -> CaseDetail:
    found = case_details(cur, run_id, [case_id], store, cache, baseline)
    if not found:
        raise ViewError(f"case {case_id!r} is not in the current dataset")
    return found[0]


#: Reads of one case run side by side: each is a few small queries whose time is mostly per-query overhead, so
#: on two cores the case opens in the time of the slowest read, not of their sum.
_READS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="case-read")


def _on_own_cursor(con: duckdb.DuckDBPyConnection, fn: Callable[..., T], *args: Any) -> Future[T]:
    def run() -> T:
        cur = con.cursor()
        try:
            return fn(cur, *args)
        finally:
            cur.close()

    return _READS.submit(run)


def case_detail_soon(
    reader: StoreReader,
    run_id: str,
    case_id: str,
    store: NotesStore,
    cache: RunCache,
    baseline: str | None,
    then: Callable[[CaseDetail], T],
) -> Future[T]:
    """``then(case_detail(...))`` started now on a cursor of its own, for a case screen that is not built yet: the
    reads (and ``then``, the screen's layout of the sections) run while the list is shown or Textual mounts the
    screen, not after it."""

    def run() -> T:
        with reader.cursor() as cur:
            detail = case_detail(cur, run_id, case_id, store, cache, baseline)
        return then(detail)

    return _EARLY.submit(run)


#: one early read at a time (a person opens one case per key press); it fans out to :data:`_READS` itself
_EARLY = ThreadPoolExecutor(max_workers=1, thread_name_prefix="case-open")


def _head(cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str]) -> tuple[Any, Any, Any]:
    """The cases' rows, ranked lists and run events."""
    params = {"run_id": run_id, "case_ids": case_ids}
    cases = cur.sql(
        "SELECT * FROM cases WHERE case_id IN (SELECT unnest($case_ids::VARCHAR[]))", params={"case_ids": case_ids}
    )
    found = {str(c["case_id"]): c for c in cases.to_arrow_table().to_pylist()}
    results = by_case(cur.sql(RESULTS_SQL, params=params).to_arrow_table())
    events = {str(e["case_id"]): e for e in cur.sql(EVENTS_SQL, params=params).to_arrow_table().to_pylist()}
    return found, results, events


def _located(cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str], k: int) -> dict[str, Any]:
    located = core("classify.unit_locations", unit_locations, cur, run_id, case_ids, k=k)
    return by_case(require(located, LOCATION_COLUMNS, "classify.unit_locations"))


def case_details(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_ids: list[str],
    store: NotesStore,
    cache: RunCache,
    baseline: str | None = None,
) -> list[CaseDetail]:
    """Several cases at once (the case opened, or the neighbours `n`/`p` will show next): each query reads the
    rows of these cases only, and a batch costs about what one case does; the reads run side by side, each on its
    own cursor. Cases not in the dataset are left out."""
    k = cache.k(run_id, cur)
    cache.fresh(run_id, cur)  # before the reads fan out, so they never race to compute it
    head = _on_own_cursor(cur, _head, run_id, case_ids)
    reads: dict[str, Future[Any]] = {
        "classification": _on_own_cursor(cur, case_failures, run_id, case_ids, cache),
        "missing": _on_own_cursor(cur, _located, run_id, case_ids, k),
        "metrics": _on_own_cursor(cur, case_metrics, run_id, case_ids, k),
    }
    if baseline:
        reads["baseline"] = _on_own_cursor(cur, case_metrics, baseline, case_ids, k)
    try:
        return _fill(cur, run_id, case_ids, store, cache, baseline, k, head, reads)
    finally:
        wait([head, *reads.values()])  # no read outlives the connection it runs on


def _fill(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_ids: list[str],
    store: NotesStore,
    cache: RunCache,
    baseline: str | None,
    k: int,
    head: Future[tuple[Any, Any, Any]],
    reads: dict[str, Future[Any]],
) -> list[CaseDetail]:
    found, results, events = head.result()
    out = {
        cid: CaseDetail(run_id, k, found[cid], results.get(cid, []), baseline, note=store.get(run_id, cid))
        for cid in case_ids
        if cid in found
    }
    for d in out.values():
        d.events = events.get(d.case["case_id"])

    def each(section: str, fill: Callable[[], None]) -> None:
        try:
            fill()
        except ViewError as exc:
            for d in out.values():
                d.errors[section] = str(exc)

    def failures() -> None:
        rows = reads["classification"].result()
        for cid, d in out.items():
            d.failures = rows.get(cid, [])

    def locations() -> None:
        rows = reads["missing"].result()
        for cid, d in out.items():
            d.locations = rows.get(cid, [])
            d.relevant = {str(r["unit_id"]) for r in d.locations}

    def metrics() -> None:
        mine = reads["metrics"].result()
        base = reads["baseline"].result() if "baseline" in reads else {}
        for cid, d in out.items():
            d.metrics, d.baseline_metrics = mine.get(cid, {}), base.get(cid, {})

    def leaks() -> None:
        table = cache.table("leakage", run_id, cur)
        for cid, d in out.items():
            d.leaks = case_leaks(table, cid)

    def stale() -> None:
        table = cache.table("stale", run_id, cur)
        for cid, d in out.items():
            d.stale = {(str(r["stage"]), int(r["rank"])): str(r["reason"]) for r in case_rows(table, cid)}

    each("classification", failures)
    each("missing", locations)
    each("metrics", metrics)
    each("leaks", leaks)
    each("stale", stale)
    return list(out.values())


FAILS, NOT_CHECKED, CLEAN = "fails", "not checked", "no leaks"


@dataclass(frozen=True)
class LeakVerdict:
    """A run's leakage verdict as the views state it: FAILS when anything leaked, NOT CHECKED when no case could
    be checked (no case has a principal, or no corpus manifest to read acls from), else no leaks in the cases
    checked, with the unchecked ones counted; never "none" for a run nothing was checked on. The figures are the
    core's, those ``ragtriage check`` reads: ``checks.leakage`` (cached per run) and ``checks.leakage.coverage``
    over ``unchecked_cases``."""

    run_id: str
    leaked_cases: int
    leaked_final: int  # distinct final-stage results leaked
    coverage: Coverage

    @property
    def cases(self) -> int:
        return self.coverage.cases

    @property
    def checked(self) -> int:
        return self.coverage.checked

    @property
    def unchecked(self) -> int:
        return self.cases - self.checked

    def why_unchecked(self) -> str:
        return self.coverage.why_unchecked()

    @property
    def state(self) -> str:
        if self.leaked_cases:
            return FAILS
        return CLEAN if self.checked or not self.coverage.applicable else NOT_CHECKED

    def sentence(self) -> str:
        """The verdict in words, for the overview's banner."""
        if self.state == FAILS:
            return f"LEAKAGE FAILS: {self.leaked_cases} cases, {self.leaked_final} leaked final results"
        if self.state == NOT_CHECKED:
            return f"leakage: NOT CHECKED ({self.why_unchecked()} in any of {self.cases} cases)"
        if not self.coverage.applicable:
            return f"leakage: {NOT_APPLICABLE}"
        rest = f"; {self.unchecked} not checked ({self.why_unchecked()})" if self.unchecked else ""
        return f"leakage: none in {self.checked} checked cases{rest}"


def leak_verdict(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> LeakVerdict:
    leaks = cache.table("leakage", run_id, cur)

    def covered() -> Coverage:
        unchecked: pa.Table = core("checks.unchecked_cases", unchecked_cases, cur, run_id)
        return core("checks.leakage.coverage", coverage, cur, unchecked)

    leaked_cases, leaked_final = leak_counts(leaks)
    return LeakVerdict(run_id, leaked_cases, leaked_final, cache.remember(("coverage", run_id), covered))


class NotesWatch:
    """Tells whether another connection committed to the notes file since the last look: SQLite's
    ``PRAGMA data_version`` on one connection kept for this, a microsecond read with no table scan."""

    def __init__(self, path: Path) -> None:
        self._con: sqlite3.Connection | None = None
        try:
            self._con = sqlite3.connect(path, check_same_thread=False)
            self._seen = self._version()
        except sqlite3.Error:
            self._con = None

    def _version(self) -> int:
        assert self._con is not None
        row = self._con.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def changed(self) -> bool:
        if self._con is None:
            return False
        try:
            now = self._version()
        except sqlite3.Error:
            return False
        seen, self._seen = self._seen, now
        return now != seen

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
