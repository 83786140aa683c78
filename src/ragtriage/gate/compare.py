"""Paired comparison of a candidate run against a baseline, per metric and cutoff, overall and per slice.

A case is paired when both runs have a defined figure for it (it has relevant units) on the same dataset
version; differences are ``candidate - baseline``. Each (slice, metric) gets wins/ties/losses, the two means,
a paired bootstrap 95% interval (``INTERVAL_RESAMPLES``) and a sign-flip randomization p-value
(``significance``, ``n_resamples``), and the cases that
lost most are listed by id so a reader can open them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ragtriage.arrays import non_null_values, table_of_rows
from ragtriage.gate import sources
from ragtriage.gate.significance import paired_tests
from ragtriage.metrics.distribution import N_RESAMPLES

FAMILIES = ("P", "R", "RR", "nDCG", "AP", "Success")
_METRIC = re.compile(r"^(P|R|RR|nDCG|AP|Success)@([1-9][0-9]*)$")
TIE = 1e-12
OVERALL = "all"
#: Bootstrap resamples of every interval, as ``ragtriage metrics`` and ``compare --runs`` draw them; the
#: randomization test takes ``n_resamples`` (its p-value decides, the interval only describes). At 300,000 cases
#: a 10,000-resample interval of nDCG differences costs 3.4 s, a 1,000-resample one 0.35 s.
INTERVAL_RESAMPLES = N_RESAMPLES


def parse_metric(name: str) -> tuple[str, int]:
    """``"nDCG@5"`` → ("nDCG", 5); anything else is a ValueError naming the accepted forms."""
    m = _METRIC.match(name)
    if m is None:
        raise ValueError(f"unknown metric {name!r}; use one of {', '.join(f + '@k' for f in FAMILIES)} (e.g. nDCG@5)")
    return m.group(1), int(m.group(2))


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


def _long(alias: str, metrics: Sequence[str]) -> str:
    """Per-case wide table → (case_id, metric, value), keeping only cases with relevant units."""
    parts = [
        f"""SELECT case_id, '{m}' AS metric, {i} AS metric_order, CAST("{m}" AS DOUBLE) AS value
            FROM {alias} WHERE n_relevant > 0"""
        for i, m in enumerate(metrics)
    ]
    return " UNION ALL ".join(parts)


def _pairs(cand: pa.Table, base: pa.Table, cases: pa.Table, metrics: Sequence[str], split: str | None) -> pa.Table:
    cur = duckdb.connect()
    cur.register("cand", cand)
    cur.register("base", base)
    cur.register("case_slices", cases)
    return cur.sql(
        f"""
        WITH c AS ({_long("cand", metrics)}), b AS ({_long("base", metrics)}),
        kept AS (SELECT DISTINCT case_id FROM case_slices WHERE $split IS NULL OR split = $split)
        SELECT s.slice, c.case_id, c.metric, c.metric_order, c.value AS candidate, b.value AS baseline,
               c.value - b.value AS diff
        FROM c JOIN b USING (case_id, metric) JOIN kept USING (case_id) JOIN case_slices s USING (case_id)
        WHERE c.value IS NOT NULL AND b.value IS NOT NULL
        ORDER BY c.metric_order, s.slice, c.case_id
        """,
        params={"split": split},
    ).to_arrow_table()


def _codes(column: pa.ChunkedArray) -> npt.NDArray[np.uint64]:
    """Integer codes of a string column (equal strings, equal codes), without a Python object per row."""
    return non_null_values(column.combine_chunks().dictionary_encode().indices, np.uint64)


def _summarise(pairs: pa.Table, slice_col: str, seed: int, n_resamples: int) -> list[dict[str, object]]:
    """One summary row per (metric, slice). Rows are sorted by metric, slice, case; the metrics of one slice that
    pair the same cases go to ``paired_tests`` as the columns of one matrix (each column keeps its own seeded
    draws, so a figure does not depend on which other metrics were asked for)."""
    if pairs.num_rows == 0:
        return []
    metric, slices = pairs.column("metric"), pairs.column(slice_col)
    metric_code, slice_code, case_code = _codes(metric), _codes(slices), _codes(pairs.column("case_id"))
    cand = non_null_values(pairs.column("candidate"), np.float64)  # pairs hold defined values only
    base = non_null_values(pairs.column("baseline"), np.float64)
    change = np.r_[True, (metric_code[1:] != metric_code[:-1]) | (slice_code[1:] != slice_code[:-1])]
    starts = np.flatnonzero(change)
    ends = np.r_[starts[1:], len(change)]
    by_slice: dict[int, list[tuple[int, int]]] = {}
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        by_slice.setdefault(int(slice_code[s]), []).append((s, e))
    out: list[dict[str, object]] = []
    for segments in by_slice.values():
        first = case_code[segments[0][0] : segments[0][1]]
        same = all(np.array_equal(case_code[s:e], first) for s, e in segments[1:])
        for batch in [segments] if same else [[seg] for seg in segments]:
            c = np.column_stack([cand[s:e] for s, e in batch])
            b = np.column_stack([base[s:e] for s, e in batch])
            d = c - b
            tests = paired_tests(c, b, n_resamples=n_resamples, seed=seed, interval_resamples=INTERVAL_RESAMPLES)
            for j, ((s, _), test) in enumerate(zip(batch, tests, strict=True)):
                out.append(
                    {
                        "slice": str(slices[s]),
                        "metric": str(metric[s]),
                        "n": test.n,
                        "wins": int(np.count_nonzero(d[:, j] > TIE)),
                        "ties": int(np.count_nonzero(np.abs(d[:, j]) <= TIE)),
                        "losses": int(np.count_nonzero(d[:, j] < -TIE)),
                        "candidate": float(c[:, j].mean()),
                        "baseline": float(b[:, j].mean()),
                        "mean_diff": test.mean_diff,
                        "ci_low": test.ci_low,
                        "ci_high": test.ci_high,
                        "p_value": test.p_value,
                        "exact": test.exact,
                    }
                )
    return out


def _worst(pairs: pa.Table, n: int) -> pa.Table:
    cur = duckdb.connect()
    cur.register("pairs", pairs)
    return cur.sql(
        """SELECT metric, case_id, slice, candidate, baseline, diff FROM (
               SELECT *, row_number() OVER (PARTITION BY metric ORDER BY diff, case_id) AS pos
               FROM (SELECT metric, metric_order, case_id, string_agg(slice, ', ' ORDER BY slice) AS slice,
                            any_value(candidate) AS candidate, any_value(baseline) AS baseline,
                            any_value(diff) AS diff
                     FROM pairs WHERE diff < -$tie GROUP BY metric, metric_order, case_id))
           WHERE pos <= $n ORDER BY metric_order, pos""",
        params={"n": n, "tie": TIE},
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


def compare_tables(
    candidate: pa.Table,
    baseline: pa.Table,
    cases: pa.Table,
    metrics: Sequence[str],
    *,
    split: str | None = None,
    seed: int = 0,
    n_resamples: int = 10_000,
    worst_n: int = 10,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The pure part of ``compare``: (summary, pairs, worst) from two per-case tables and the case slices.

    ``cases`` has case_id, split, slice (several rows per case for multi-valued slices); rows with slice 'all'
    only (no ``by``) give just the overall figures.
    """
    pairs = _pairs(candidate, baseline, cases, metrics, split)
    cur = duckdb.connect()
    cur.register("pairs", pairs)
    overall = cur.sql(
        """SELECT DISTINCT 'all' AS slice, case_id, metric, metric_order, candidate, baseline, diff FROM pairs
           ORDER BY metric_order, case_id"""
    ).to_arrow_table()
    rows = _summarise(overall, "slice", seed, n_resamples)
    sliced = cur.execute("SELECT count(*) FROM pairs WHERE slice <> $all", {"all": OVERALL}).fetchone()
    if sliced and sliced[0]:
        rows += _summarise(pairs, "slice", seed, n_resamples)
    order = {m: i for i, m in enumerate(metrics)}
    rows.sort(key=lambda r: (order[str(r["metric"])], r["slice"] != OVERALL, str(r["slice"])))
    summary = table_of_rows(rows, SUMMARY_SCHEMA)
    return summary, pairs.drop_columns(["metric_order"]), _worst(pairs, worst_n)


def compare(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    baseline: str,
    ks: Sequence[int] = (3, 5, 10),
    *,
    by: str | None = None,
    split: str | None = None,
    seed: int = 0,
    n_resamples: int = 10_000,
    metrics: Sequence[str] | None = None,
    worst_n: int = 10,
) -> Comparison:
    """Compare ``run_id`` with ``baseline`` on every metric at ``ks`` (or the named ``metrics``)."""
    version = sources.paired_version(con, run_id, baseline)
    names = list(metrics) if metrics else metric_names(ks)
    cutoffs = tuple(sorted({parse_metric(m)[1] for m in names}))
    cand, base = sources.per_case(con, run_id, cutoffs), sources.per_case(con, baseline, cutoffs)
    cases = sources.case_slices(con, version, by)
    summary, pairs, worst = compare_tables(
        cand, base, cases, names, split=split, seed=seed, n_resamples=n_resamples, worst_n=worst_n
    )
    cand_ids, base_ids = set(cand.column("case_id").to_pylist()), set(base.column("case_id").to_pylist())
    unpaired = {"candidate_only": len(cand_ids - base_ids), "baseline_only": len(base_ids - cand_ids)}
    return Comparison(run_id, baseline, version, cutoffs, by, split, seed, n_resamples, summary, pairs, worst, unpaired)
