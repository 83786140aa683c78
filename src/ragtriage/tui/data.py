"""What each TUI list shows, read from the core functions imported directly (no textual here, no figure computed
here).

Each function takes a DuckDB cursor (one per worker thread) and returns an Arrow table whose columns are named
in this module. The core's answers have declared columns (``classify.failures``, ``checks.leakage``,
``metrics.per_case``, ``metrics.slices``, ``gate.compare``); :func:`require` checks the ones read here, so a
changed core schema is a clear message, not a guessed column. A core error is raised as :class:`ViewError` with
the core's words, which the view prints in place of its table.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import non_null_values
from ragtriage.checks.leakage import leakage as core_leakage
from ragtriage.checks.staleness import stale_results
from ragtriage.classify import CostReport, RunClassification, judging_k, run_classification, unit_locations
from ragtriage.gate.compare import Comparison
from ragtriage.gate.compare import compare as core_compare
from ragtriage.metrics import summary_cache
from ragtriage.metrics.per_case import per_case as core_per_case
from ragtriage.metrics.slices import CASE_FIELDS, EVIDENCE_FIELDS, NONE, membership_sql
from ragtriage.metrics.slices import slices as core_slices
from ragtriage.metrics.summary import summarize
from ragtriage.notes import NotesStore
from ragtriage.store import connect
from ragtriage.tui.text import natural_order

DIMENSIONS = CASE_FIELDS + EVIDENCE_FIELDS
#: Measures a case screen, the Compare view and the overview histogram offer, all at the run's own k.
CASE_MEASURES = ("nDCG", "P", "R", "RR", "AP")
DEFAULT_KS = (3, 5, 10)
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
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        con = connect(self.path, read_only=True)
        try:
            yield con
        finally:
            con.close()


def one_row(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> dict[str, Any] | None:
    rows = cur.sql(sql, params=params).to_arrow_table().to_pylist()
    return rows[0] if rows else None


def measure_ks(k: int) -> tuple[int, ...]:
    """The cutoffs a run is read at: the usual 3, 5, 10 and the run's own k."""
    return tuple(sorted({*DEFAULT_KS, k}))


class RunCache:
    """Whole-run core answers (failures, leakage, per-case metrics, unit locations, k), fetched once per run and
    shared by workers. A failure is cached too, so a core error is reported once, not retried on every case."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}
        self._values: dict[tuple[str, str], Any] = {}

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def _get(self, kind: str, run_id: str, cur: duckdb.DuckDBPyConnection) -> Any:
        key = (kind, run_id)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # a second asker waits for the first instead of computing the same answer again
            hit = self._values.get(key)
            if hit is None:
                try:
                    hit = FETCHERS[kind](cur, run_id, self)
                except ViewError as exc:
                    hit = exc
                self._values[key] = hit
        if isinstance(hit, ViewError):
            raise hit
        return hit

    def table(self, kind: str, run_id: str, cur: duckdb.DuckDBPyConnection) -> pa.Table:
        value = self._get(kind, run_id, cur)
        assert isinstance(value, pa.Table)
        return value

    def k(self, run_id: str, cur: duckdb.DuckDBPyConnection) -> int:
        value = self._get("k", run_id, cur)
        assert isinstance(value, int)
        return value

    def classification(self, run_id: str, cur: duckdb.DuckDBPyConnection) -> RunClassification:
        value = self._get("classification", run_id, cur)
        assert isinstance(value, RunClassification)
        return value


FAILURE_COLUMNS = ("case_id", "failure", "category", "rule", "evidence", "patterns", "k")
LEAK_COLUMNS = ("case_id", "stage", "rank", "unit_id", "rule", "detail")
LOCATION_COLUMNS = ("case_id", "unit_id", "grade", "location", "final_rank", "candidate_rank", "permitted")


def _k(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> int:
    """The k the run is judged at (the classifier's, the run's own): every per-case figure is read at it."""
    return core("classify.judging_k", judging_k, cur, run_id)


def _classification(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> RunClassification:
    """The stored classification (failures and cost per category) when fresh, else computed once here."""
    found = core("classify.run_classification", run_classification, cur, run_id, k=cache.k(run_id, cur))
    require(found.rows, FAILURE_COLUMNS, "classify.run_classification")
    return found


def _failures(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    return cache.classification(run_id, cur).rows


def _leakage(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    return require(core("checks.leakage", core_leakage, cur, run_id), LEAK_COLUMNS, "checks.leakage")


def _per_case(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """At 3, 5, 10 and every loaded run's k, so a baseline has figures at the candidate's k too."""
    ks = tuple(sorted({*DEFAULT_KS, *(int(r[0]) for r in cur.execute("SELECT DISTINCT k FROM runs").fetchall())}))
    return require(core("metrics.per_case", core_per_case, cur, run_id, ks), ("case_id",), "metrics.per_case")


def _stale(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    stale = core("checks.stale_results", stale_results, cur, run_id)
    return require(stale, ("case_id", "stage", "rank", "reason"), "checks.stale_results")


def _locations(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> pa.Table:
    """Where every labelled unit of every case is (one call per run: per case it costs as much as per run)."""
    located = core("classify.unit_locations", unit_locations, cur, run_id)
    return require(located, LOCATION_COLUMNS, "classify.unit_locations")


FETCHERS: dict[str, Callable[[duckdb.DuckDBPyConnection, str, RunCache], Any]] = {
    "k": _k,
    "classification": _classification,
    "failures": _failures,
    "leakage": _leakage,
    "per_case": _per_case,
    "unit_locations": _locations,
    "stale": _stale,
}


def run_ids(cur: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in cur.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]


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
SUMMARY_CONTEXT = ("threshold", "gain", "unit", "stage")


@dataclass(frozen=True)
class Summary:
    """``metrics.summarize`` as the overview shows it: the columns that fit 80 wide and the context every figure
    needs (threshold, gain, unit, stage), which is the same on every row and so goes to the title."""

    table: pa.Table
    context: str


def summary(cur: duckdb.DuckDBPyConnection, run_id: str, db_path: str | Path | None = None) -> Summary:
    """With ``db_path`` the full table is read from / written to :mod:`summary_cache`."""
    full = summary_cache.load(db_path, run_id) if db_path is not None else None
    if full is None:
        full = core("metrics.summarize", summarize, cur, run_id).to_arrow()
        if db_path is not None:
            summary_cache.save(db_path, run_id, full)
    require(full, SUMMARY_COLUMNS, "metrics.summarize")
    context = ""
    if full.num_rows:
        first = full.slice(0, 1).to_pylist()[0]
        context = " ".join(f"{c}={first[c]}" for c in SUMMARY_CONTEXT if c in first)
    return Summary(full.select(list(SUMMARY_COLUMNS)), context)


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
    """Failing cases per automatic category and what each costs the run (``CostReport``, classify.cost)."""

    counts: pa.Table  # category, cases, cost (NULL for security: a hard failure, never a measure)
    costs: CostReport


def categories(found: RunClassification) -> Categories:
    """Failing cases per category (a case with two categories counts in both) beside the category's cost."""
    counts = found.rows.group_by("category").aggregate([("case_id", "count_distinct")])
    counts = counts.rename_columns(["category", "cases"])
    cost = pa.table(
        {"category": [c.category for c in found.costs.costs], "cost": [c.cost for c in found.costs.costs]},
        schema=pa.schema([("category", pa.string()), ("cost", pa.float64())]),
    )
    joined = counts.join(cost, "category", join_type="left outer")
    return Categories(joined.sort_by([("cases", "descending"), ("category", "ascending")]), found.costs)


def with_query(cur: duckdb.DuckDBPyConnection, rows: pa.Table) -> pa.Table:
    """Rows keyed by case_id with the case's query as the last column (free text takes the width left)."""
    cur.register("_rows", rows)
    try:
        keep = [c for c in rows.column_names if c != "query"]
        cols = ", ".join(f'r."{c}"' for c in keep)
        return cur.sql(f"SELECT {cols}, c.query FROM _rows r LEFT JOIN cases c USING (case_id)").to_arrow_table()
    finally:
        cur.unregister("_rows")


def triage_table(cur: duckdb.DuckDBPyConnection, fail: pa.Table, run_id: str, store: NotesStore) -> pa.Table:
    """The failures list: one row per failing case, its automatic categories and rules beside the person's
    triage, ids in natural order."""
    notes = store.to_arrow(run_id)
    cur.register("_fail", fail)
    cur.register("_notes", notes)
    agg = "string_agg(DISTINCT {0}, '; ' ORDER BY {0})"
    try:
        rows = cur.sql(
            f"""SELECT f.case_id, any_value(n.status) AS status, any_value(n.category) AS mine,
                       {agg.format("f.rule")} AS rule, any_value(c.query) AS query,
                       nullif(string_agg(DISTINCT p.pattern, '; ' ORDER BY p.pattern), '') AS pattern,
                       any_value(n.note) AS note, {agg.format("f.category")} AS _auto,
                       string_agg(CAST(f.evidence AS VARCHAR), ' ') AS _units
                FROM _fail f LEFT JOIN cases c USING (case_id) LEFT JOIN _notes n USING (case_id)
                LEFT JOIN (SELECT case_id, unnest(patterns) AS pattern FROM _fail) p USING (case_id)
                GROUP BY f.case_id"""
        ).to_arrow_table()
    finally:
        cur.unregister("_fail")
        cur.unregister("_notes")
    return natural_order(rows, "case_id")


def leakage_by_case(cur: duckdb.DuckDBPyConnection, leaks: pa.Table) -> pa.Table:
    """One row per leaking case: leaked units in the final list and in the candidates, the rules broken; cases
    with a final-stage leak first (what a user is shown), then natural id order."""
    cur.register("_leaks", leaks)
    try:
        rows = cur.sql(
            """SELECT case_id,
                      count(DISTINCT unit_id) FILTER (WHERE stage = 'final') AS final,
                      count(DISTINCT unit_id) FILTER (WHERE stage <> 'final') AS candidate,
                      string_agg(DISTINCT rule, ', ' ORDER BY rule) AS rules,
                      string_agg(DISTINCT unit_id, ' ') AS _units
               FROM _leaks GROUP BY case_id"""
        ).to_arrow_table()
    finally:
        cur.unregister("_leaks")
    rows = natural_order(with_query(cur, rows), "case_id")
    has_final = pc.greater(rows.column("final"), 0)
    return rows.append_column("__f", has_final).sort_by([("__f", "descending")]).drop_columns(["__f"])


@dataclass(frozen=True)
class Leak:
    """One leaked result of a case: where it is, and every reason (rule and the check's sentence) in full."""

    stage: str
    rank: int
    unit_id: str
    reasons: list[str]


def case_leaks(leaks: pa.Table, case_id: str) -> list[Leak]:
    """The case's leaked results, final stage first, by rank (a handful per case)."""
    mine = leaks.filter(pc.equal(leaks.column("case_id"), case_id))
    grouped: dict[tuple[str, int, str], list[str]] = {}
    for r in mine.select(["stage", "rank", "unit_id", "rule", "detail"]).to_pylist():
        unit, detail = str(r["unit_id"]), str(r["detail"])
        detail = detail.removeprefix(f"{unit}: ")  # the unit is on the line already
        grouped.setdefault((str(r["stage"]), int(r["rank"]), unit), []).append(f"{r['rule']}: {detail}")
    keys = sorted(grouped, key=lambda key: (key[0] != "final", key[1]))
    return [Leak(s, rank, unit, grouped[(s, rank, unit)]) for s, rank, unit in keys]


def zero_hit(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> tuple[pa.Table, int]:
    """Answerable cases with no relevant result in the run's top k (``zero_hit@k`` of metrics.per_case)."""
    k = cache.k(run_id, cur)
    flag = f"zero_hit@{k}"
    per_case = require(cache.table("per_case", run_id, cur), (flag, "n_relevant", "n_retrieved"), "metrics.per_case")
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
    k = cache.k(run_id, cur)
    table = core("metrics.slices", core_slices, cur, run_id, by=dimension, ks=measure_ks(k), k=k)
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
class CompareView:
    """One measure of ``gate.compare`` as a list: one row per paired case, worst regression first."""

    table: pa.Table
    measure: str
    wins: int
    losses: int
    ties: int
    deltas: list[float]


def comparison(cur: duckdb.DuckDBPyConnection, run_id: str, baseline: str, cache: RunCache) -> Comparison:
    """gate.compare of every case measure at the run's k (one call; the measure key only re-selects)."""
    k = cache.k(run_id, cur)
    metrics = [f"{m}@{k}" for m in CASE_MEASURES]
    result = core("gate.compare", core_compare, cur, run_id, baseline, metrics=metrics, n_resamples=1000)
    require(result.pairs, ("case_id", "metric", "candidate", "baseline", "diff"), "gate.compare")
    return result


def compare_view(cur: duckdb.DuckDBPyConnection, result: Comparison, family: str) -> CompareView:
    measure = f"{family}@{result.ks[-1]}"  # every measure was compared at the run's k
    pairs = result.pairs.filter(pc.equal(result.pairs.column("metric"), measure))
    rows = pairs.select(["case_id", "baseline", "candidate", "diff"])
    rows = natural_order(with_query(cur, rows), "case_id").sort_by([("diff", "ascending")])
    diff = non_null_values(rows.column("diff"), np.float64)
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    return CompareView(rows, measure, wins, losses, int(len(diff)) - wins - losses, diff.tolist())


def leak_counts(leaks: pa.Table) -> tuple[int, int]:
    """(leaking cases, leaked final-stage results) for the overview's banner."""
    final = leaks.filter(pc.equal(leaks.column("stage"), "final"))
    cases = pc.count_distinct(leaks.column("case_id")).as_py()
    keys = final.group_by(["case_id", "rank"]).aggregate([]).num_rows if final.num_rows else 0
    return int(cases or 0), int(keys)
