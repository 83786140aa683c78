"""The one paired comparison every command reads: the paired table (per-case values of runs x measures over the
same cases), the statistics of a candidate's column against the baseline's (``significance.paired_tests``:
mean difference, interval, p-value, wins/ties/losses), stated in one sentence (``method``), and ``compare``,
one candidate against a baseline per measure, overall and per slice.

``compare --run``, the gate's regression rule, ``compare --runs`` and ``report`` (``experiments.runs_table``)
and the TUI's Compare take their figures from here, so for the same pair, measure and cases they print the same
mean difference, interval and p-value, digit for digit. A case is paired when it has a relevant unit and every
run has a defined value for it; differences are ``candidate - baseline``. ``compare``'s overall rows are the
one-candidate case of ``compare --runs``; each (slice, measure) gets wins/ties/losses, the two means, the
interval and the p-value, and the cases that lost most are listed by id so a reader can open them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import non_null_values, table_of_rows
from ragtriage.contract.staging import qident, sql_str
from ragtriage.gate import sources
from ragtriage.gate.significance import INTERVAL_RESAMPLES, TIE, PairStats, paired_tests
from ragtriage.metrics.distribution import CONFIDENCE
from ragtriage.metrics.measures import parse_measures
from ragtriage.store.memory_cap import cap_in_memory

__all__ = [
    "INTERVAL_RESAMPLES",
    "TIE",
    "Comparison",
    "PairStats",
    "compare",
    "compare_tables",
    "method",
    "metric_names",
    "pair_stats",
    "paired_matrix",
    "worst_first",
]

#: decimals of a difference that order the cases by loss (then by case id). A per-case value summed by DuckDB's
#: parallel aggregation may differ in its last bits between two runs on the same store, so two cases whose
#: differences are equal to these decimals are equal for the order: the same output comes every time.
ORDER_DECIMALS = 9
RANDOMIZATION = "paired randomization (sign-flip) test"
#: the seed and the resamples of the test when a command is given none (``compare``, ``report``, the TUI)
SEED, TEST_RESAMPLES = 0, 10_000

FloatArray = npt.NDArray[np.float64]
#: the statistics of each candidate column against its baseline column (``significance.paired_tests``)
pair_stats = paired_tests


def method(*, n_resamples: int, seed: int, test: str = RANDOMIZATION) -> str:
    """The sentence that states how every paired figure was made: interval, test, resamples and seed."""
    drawn = f", {n_resamples} resamples unless exact" if test == RANDOMIZATION else ""
    return (
        f"Δ = candidate - baseline on paired cases; {int(CONFIDENCE * 100)}% percentile bootstrap interval of the "
        f"mean Δ ({INTERVAL_RESAMPLES} resamples); two-sided {test}{drawn}; seed {seed}"
    )


def paired_matrix(
    con: duckdb.DuckDBPyConnection, runs: Sequence[str], measures: Sequence[str], split: str | None
) -> tuple[pa.Array, FloatArray]:
    """(case_ids, values n x runs x measures) over the paired cases of ``split``, sorted by case.

    Values come from ``sources.measure_values`` (the one engine, through the fixed table where it holds the
    measure): the cases of the per-run figures, which the request's population chose (``EvalContext.population_sql``),
    so the pairs are exactly the cases each run's mean is taken over."""
    cur = duckdb.connect()
    for i, run in enumerate(runs):
        wide = sources.measure_values(con, run, measures, split)
        cur.register(f"r{i}", wide.rename_columns(["case_id", *(f"c{i}_{j}" for j in range(len(measures)))]))
    cols = [f"c{i}_{j}" for i in range(len(runs)) for j in range(len(measures))]
    joins = " ".join(f"JOIN r{i} USING (case_id)" for i in range(1, len(runs)))
    defined = " AND ".join(f"{c} IS NOT NULL" for c in cols)
    table = cur.sql(
        f"""SELECT case_id, {", ".join(f"CAST({c} AS DOUBLE) AS {c}" for c in cols)}
            FROM r0 {joins} WHERE {defined} ORDER BY case_id"""
    ).to_arrow_table()
    cur.close()
    values = np.empty((table.num_rows, len(runs), len(measures)))
    for i in range(len(runs)):
        for j in range(len(measures)):
            values[:, i, j] = non_null_values(table.column(f"c{i}_{j}"), np.float64)
    return table.column("case_id").combine_chunks(), values


def worst_first(pairs: pa.Table) -> pa.Table:
    """The rows of ``pairs`` (with ``diff`` and ``case_id``) that lose by more than ``TIE``, the largest loss
    first, equal losses (to ``ORDER_DECIMALS``, rounded half away from zero as DuckDB's ``round``) by case id."""
    losses = pairs.filter(pc.less(pairs.column("diff"), -TIE))
    key = pc.round(losses.column("diff"), ORDER_DECIMALS, round_mode="half_towards_infinity")
    ordered = losses.append_column("_order", key).sort_by([("_order", "ascending"), ("case_id", "ascending")])
    return ordered.drop_columns(["_order"])


FAMILIES = ("P", "R", "RR", "nDCG", "AP", "Success")
OVERALL = "all"


def metric_names(ks: Sequence[int]) -> list[str]:
    return [f"{f}@{k}" for f in FAMILIES for k in sorted(set(ks))]


@dataclass(frozen=True)
class Comparison:
    """Everything ``compare`` found. ``summary`` has one row per (slice, metric); ``pairs`` one per paired case."""

    run_id: str
    baseline: str
    dataset_version: str
    ks: tuple[int, ...]
    by: str | None
    split: str | None
    seed: int
    n_resamples: int
    summary: pa.Table
    pairs: pa.Table
    worst: pa.Table
    unpaired: dict[str, int] = field(default_factory=dict)

    def row(self, metric: str, slice_value: str = OVERALL) -> dict[str, object]:
        """The summary row of one metric and slice (KeyError when absent)."""
        for r in self.summary.to_pylist():
            if r["metric"] == metric and r["slice"] == slice_value:
                return dict(r)
        raise KeyError(f"{metric} / {slice_value}")


#: Working memory of the in-memory databases that join, unfold and rank the per-case tables: they hold a row per
#: (case, metric), and the store's own connection is open beside them.
SCRATCH_LIMIT = 512 << 20


def _scratch() -> duckdb.DuckDBPyConnection:
    """An in-memory database under ``SCRATCH_LIMIT``, spilling to a folder of its own past it."""
    con = duckdb.connect()
    cap_in_memory(con, SCRATCH_LIMIT)
    return con


def _pairs(
    cur: duckdb.DuckDBPyConnection,
    cand: pa.Table,
    base: pa.Table,
    cases: pa.Table,
    metrics: Sequence[str],
    split: str | None,
) -> pa.Table:
    """(slice, case_id, metric, metric_order, candidate, baseline, diff) of every case both runs define, sorted by
    metric, slice and case. The two tables are joined once per case (not once per case and metric) and then
    unfolded into one row per metric."""
    cur.register("cand", cand)
    cur.register("base", base)
    cur.register("case_slices", cases)
    cols = ", ".join(
        f"CAST(c.{qident(m)} AS DOUBLE) AS c{i}, CAST(b.{qident(m)} AS DOUBLE) AS b{i}" for i, m in enumerate(metrics)
    )
    unfolded = " UNION ALL ".join(
        f"""SELECT slice, case_id, {sql_str(m)} AS metric, {i} AS metric_order, c{i} AS candidate, b{i} AS baseline,
                   c{i} - b{i} AS diff
            FROM j WHERE c{i} IS NOT NULL AND b{i} IS NOT NULL"""
        for i, m in enumerate(metrics)
    )
    return cur.sql(
        f"""
        WITH j AS (SELECT s.slice, case_id, {cols}
                   FROM cand c JOIN base b USING (case_id) JOIN case_slices s USING (case_id)
                   WHERE $split IS NULL OR s.split = $split)
        {unfolded}
        ORDER BY metric_order, slice, case_id
        """,
        params={"split": split},
    ).to_arrow_table()


def _segments(cur: duckdb.DuckDBPyConnection, pairs: pa.Table) -> list[tuple[str, str, int]]:
    """(metric, slice, rows) of each run of equal (metric, slice) in ``pairs``, in the table's order (metric_order,
    then slice): a count per group in DuckDB instead of a code per row."""
    cur.register("segs", pairs.select(["metric", "metric_order", "slice"]))
    rows = cur.execute(
        "SELECT metric, slice, count(*) FROM segs GROUP BY metric_order, metric, slice ORDER BY metric_order, slice"
    ).fetchall()
    return [(str(m), str(sl), int(n)) for m, sl, n in rows]


def _summarise(cur: duckdb.DuckDBPyConnection, pairs: pa.Table, seed: int, n_resamples: int) -> list[dict[str, object]]:
    """One summary row per (metric, slice). Rows are sorted by metric, slice, case; the metrics of one slice
    with as many paired cases go to ``paired_tests`` as the columns of one matrix (each column keeps its own
    seeded draws, so a figure does not depend on which other metrics were asked for or were batched with it)."""
    if pairs.num_rows == 0:
        return []
    cand = non_null_values(pairs.column("candidate"), np.float64)  # pairs hold defined values only
    base = non_null_values(pairs.column("baseline"), np.float64)
    by_slice: dict[str, list[tuple[int, int, str]]] = {}
    start = 0
    for metric, slice_value, rows in _segments(cur, pairs):
        by_slice.setdefault(slice_value, []).append((start, start + rows, metric))
        start += rows
    out: list[dict[str, object]] = []
    for slice_value, segments in by_slice.items():
        sizes = {e - s for s, e, _ in segments}
        for batch in [segments] if len(sizes) == 1 else [[seg] for seg in segments]:
            c = np.column_stack([cand[s:e] for s, e, _ in batch])
            b = np.column_stack([base[s:e] for s, e, _ in batch])
            stats = paired_tests(c, b, seed=seed, n_resamples=n_resamples)
            for (_, _, metric), st in zip(batch, stats, strict=True):
                out.append({"slice": slice_value, "metric": metric, **asdict(st)})
    return out


def _worst(pairs: pa.Table, n: int) -> pa.Table:
    """The ``n`` cases of each metric of ``pairs`` that lost most (their slices joined)."""
    cur = _scratch()
    cur.register("pairs", pairs)
    return cur.sql(
        """SELECT metric, case_id, slice, candidate, baseline, diff FROM (
               SELECT *, row_number() OVER (PARTITION BY metric ORDER BY round(diff, $decimals), case_id) AS pos
               FROM (SELECT metric, metric_order, case_id, string_agg(slice, ', ' ORDER BY slice) AS slice,
                            any_value(candidate) AS candidate, any_value(baseline) AS baseline,
                            any_value(diff) AS diff
                     FROM pairs WHERE diff < -$tie GROUP BY metric, metric_order, case_id))
           WHERE pos <= $n ORDER BY metric_order, pos""",
        params={"n": n, "tie": TIE, "decimals": ORDER_DECIMALS},
    ).to_arrow_table()


SUMMARY_SCHEMA = pa.schema(
    [
        ("slice", pa.string()),
        ("metric", pa.string()),
        ("n", pa.int64()),
        ("wins", pa.int64()),
        ("ties", pa.int64()),
        ("losses", pa.int64()),
        ("candidate", pa.float64()),
        ("baseline", pa.float64()),
        ("mean_diff", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("p_value", pa.float64()),
        ("exact", pa.bool_()),
    ]
)


def _unpaired(cand: pa.Table, base: pa.Table) -> dict[str, int]:
    """Cases in one run's per-case table and not the other's (a set difference in DuckDB, not Python sets)."""
    cur = _scratch()
    cur.register("cand", cand.select(["case_id"]))
    cur.register("base", base.select(["case_id"]))
    row = cur.execute(
        """SELECT (SELECT count(*) FROM cand ANTI JOIN base USING (case_id)),
                  (SELECT count(*) FROM base ANTI JOIN cand USING (case_id))"""
    ).fetchall()[0]
    cur.close()
    return {"candidate_only": int(row[0]), "baseline_only": int(row[1])}


def compare_tables(
    candidate: pa.Table,
    baseline: pa.Table,
    cases: pa.Table,
    metrics: Sequence[str],
    *,
    split: str | None = None,
    seed: int = SEED,
    n_resamples: int = TEST_RESAMPLES,
    worst_n: int = 10,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The pure part of ``compare``: (summary, pairs, worst) from two per-case tables and the case slices.

    ``cases`` has case_id, split, slice (several rows per case for multi-valued slices); rows with slice 'all'
    only (no ``by``) give just the overall figures.
    """
    cur = _scratch()
    pairs = _pairs(cur, candidate, baseline, cases, metrics, split)
    cur.register("pairs", pairs)
    sliced = cur.execute("SELECT count(*) FROM pairs WHERE slice <> $all", {"all": OVERALL}).fetchall()[0][0]
    overall = pairs  # without --by every row is the overall slice already, in its order
    if sliced:
        overall = cur.sql(
            """SELECT DISTINCT 'all' AS slice, case_id, metric, metric_order, candidate, baseline, diff FROM pairs
               ORDER BY metric_order, case_id"""
        ).to_arrow_table()
    rows = _summarise(cur, overall, seed, n_resamples)
    if sliced:
        rows += _summarise(cur, pairs, seed, n_resamples)
    order = {m: i for i, m in enumerate(metrics)}
    rows.sort(key=lambda r: (order[str(r["metric"])], r["slice"] != OVERALL, str(r["slice"])))
    summary = table_of_rows(rows, SUMMARY_SCHEMA)
    cur.close()
    return summary, pairs.drop_columns(["metric_order"]), _worst(pairs, worst_n)


def compare(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    baseline: str,
    ks: Sequence[int] = (3, 5, 10),
    *,
    by: str | None = None,
    split: str | None = None,
    seed: int = SEED,
    n_resamples: int = TEST_RESAMPLES,
    metrics: Sequence[str] | None = None,
    worst_n: int = 10,
) -> Comparison:
    """Compare ``run_id`` with ``baseline`` on every metric at ``ks`` (or the named ``metrics``: any measure name
    ``metrics.measures.parse_measure`` reads)."""
    version = sources.paired_version(con, run_id, baseline)
    parsed = parse_measures(list(metrics) if metrics else metric_names(ks))
    names = list(dict.fromkeys(str(m) for m in parsed))
    cutoffs = tuple(sorted({m.cutoff for m in parsed if m.cutoff is not None}))
    cand, base = sources.side_by_side(
        lambda cur, rid: sources.measure_values(cur, rid, [*names, "NumRel"]).rename_columns(
            ["case_id", *names, "n_relevant"]
        ),
        con,
        (run_id, baseline),
    )
    cases = sources.case_slices(con, version, by)
    summary, pairs, worst = compare_tables(
        cand, base, cases, names, split=split, seed=seed, n_resamples=n_resamples, worst_n=worst_n
    )
    unpaired = _unpaired(cand, base)
    return Comparison(run_id, baseline, version, cutoffs, by, split, seed, n_resamples, summary, pairs, worst, unpaired)
