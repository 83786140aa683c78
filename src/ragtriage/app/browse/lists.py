"""The overview and the list views: run identity, summary, distribution, failure categories and the failures
list, zero-hit, slices, leakage by case and the run's leakage verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.app.browse.reads import (
    RunCache,
    ViewError,
    core,
    measure_ks,
    natural_order,
    over,
    require,
    with_query,
)
from ragtriage.arrays import non_null_values
from ragtriage.checks.leakage import NOT_APPLICABLE, Coverage, coverage, unchecked_cases
from ragtriage.checks.units import stage_order
from ragtriage.classify import CostReport, FailureSummary
from ragtriage.classify.classify_run import failure_source
from ragtriage.metrics import summary_cache
from ragtriage.metrics.context import DEFAULT_KS, labels_header, request_in_use
from ragtriage.metrics.slices import CASE_FIELDS, EVIDENCE_FIELDS, NONE, membership_sql
from ragtriage.metrics.slices import slices as core_slices
from ragtriage.metrics.summary import summarize
from ragtriage.notes import NotesStore
from ragtriage.store import k_statement as store_k_statement
from ragtriage.store import run_ids

DIMENSIONS = CASE_FIELDS + EVIDENCE_FIELDS


def one_row(cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> dict[str, Any] | None:
    rows = cur.sql(sql, params=params).to_arrow_table().to_pylist()
    return rows[0] if rows else None


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


def leak_counts(leaks: pa.Table) -> tuple[int, int]:
    """(leaking cases, leaked final-stage results) for the overview's banner."""
    final = leaks.filter(pc.equal(leaks.column("stage"), "final"))
    cases = pc.count_distinct(leaks.column("case_id")).as_py()
    keys = final.group_by(["case_id", "rank"]).aggregate([]).num_rows if final.num_rows else 0
    return int(cases or 0), int(keys)


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
