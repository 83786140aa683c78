"""The Compare view: the runs matrix, one measure of it as a list against the baseline, and why cases dropped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.app.browse.reads import CASE_MEASURES, RunCache, core, natural_order, require, with_query
from ragtriage.arrays import non_null_values, row_numbers, table_of
from ragtriage.experiments.explain import EXPLAINED_SCHEMA, explain_drops
from ragtriage.experiments.runs_table import measure_names
from ragtriage.gate.compare import SEED, TEST_RESAMPLES, paired_matrix
from ragtriage.gate.sources import paired_version
from ragtriage.metrics.context import over_arrow
from ragtriage.metrics.measures import parse_measure
from ragtriage.store import StoreError, current_dataset_version


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
    the figures of the open run against the baseline are :func:`compare_stats`'s (one statistics path)."""

    table: pa.Table
    measure: str
    runs: tuple[str, ...]
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
    return CompareView(rows, matrix.measures[j], matrix.runs, shown.tolist())


def compare_stats(cur: duckdb.DuckDBPyConnection, run_id: str, baseline: str, k: int, by: str | None) -> pa.Table:
    """``compare --run RUN --baseline BASELINE --k K [--by BY]``'s summary rows (``gate.compare.SUMMARY_SCHEMA``:
    per measure and slice both means, W/T/L, mean Δ, its 95% interval and p), through the use case the command
    calls with its default seed and resamples, so the TUI and ``compare --format json`` state the same numbers."""
    from ragtriage.app.compare import compare_one

    one = core(
        "app.compare_one",
        compare_one,
        cur,
        run_id,
        baseline,
        (k,),
        by=by,
        split=None,
        metrics=None,
        seed=SEED,
        resamples=TEST_RESAMPLES,
    )
    return one.result.summary


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
