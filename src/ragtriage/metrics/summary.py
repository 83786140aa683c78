"""Aggregated metrics of one run: the distribution of every measure at every cutoff, and the zero-hit rate.

The returned dataclass carries the relevance threshold, gain and unit with the figures, so no writer can print a
number without saying how it was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import non_null_values, table_of_rows
from ragtriage.metrics.context import DEFAULT_KS, EvalContext, MetricsError, context_of
from ragtriage.metrics.distribution import N_RESAMPLES, Distribution, describe
from ragtriage.metrics.gain import DEFAULT_GAIN
from ragtriage.metrics.measures import fixed_label
from ragtriage.metrics.per_case import MEASURES, given_per_case, per_case_context


@dataclass(frozen=True)
class MetricRow:
    measure: str
    k: int
    name: str
    mean: float | None
    median: float | None
    p10: float | None
    min: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    @classmethod
    def of(cls, measure: str, k: int, name: str, d: Distribution) -> MetricRow:
        return cls(measure, k, name, d.mean, d.median, d.p10, d.min, d.ci_low, d.ci_high, d.n)


@dataclass
class MetricReport:
    run_id: str
    threshold: int
    gain: str
    unit: str
    ks: tuple[int, ...]
    n_cases: int
    n_without_relevant: int
    rows: list[MetricRow]
    zero_hit_rate: dict[int, float | None]
    stage: str = "final"
    split: str | None = None
    mode: str = "default"
    extra: dict[str, object] = field(default_factory=dict)

    def row(self, measure: str, k: int) -> MetricRow:
        return next(r for r in self.rows if r.measure == measure and r.k == k)

    def to_arrow(self) -> pa.Table:
        """One row per (measure, k) with the context columns repeated, so an exported row stands alone."""
        rows = [
            {
                **asdict(r),
                "zero_hit_rate": self.zero_hit_rate.get(r.k),
                "threshold": self.threshold,
                "gain": self.gain,
                "unit": self.unit,
                "stage": self.stage,
                "split": self.split,
                "mode": self.mode,
                "run_id": self.run_id,
            }
            for r in self.rows
        ]
        schema = pa.schema(
            [
                ("run_id", pa.string()),
                ("measure", pa.string()),
                ("k", pa.int64()),
                ("name", pa.string()),
                ("mean", pa.float64()),
                ("median", pa.float64()),
                ("p10", pa.float64()),
                ("min", pa.float64()),
                ("ci_low", pa.float64()),
                ("ci_high", pa.float64()),
                ("n", pa.int64()),
                ("zero_hit_rate", pa.float64()),
                ("threshold", pa.int64()),
                ("gain", pa.string()),
                ("unit", pa.string()),
                ("stage", pa.string()),
                ("split", pa.string()),
                ("mode", pa.string()),
            ]
        )
        return table_of_rows(rows, schema)

    to_arrow_table = to_arrow


def column_values(table: pa.Table, name: str) -> np.ndarray:
    return non_null_values(table.column(name), np.float64)


def distributions(
    table: pa.Table,
    measures: Sequence[str],
    ks: Sequence[int],
    seed: int,
    resamples: int = N_RESAMPLES,
    gain: str = DEFAULT_GAIN,
) -> list[MetricRow]:
    rows = []
    for m in measures:
        for k in ks:
            d: Distribution = describe(column_values(table, f"{m}@{k}"), seed=seed, resamples=resamples)
            rows.append(MetricRow.of(m, k, fixed_label(m, k, gain), d))
    return rows


def zero_hit_rates(table: pa.Table, ks: Sequence[int]) -> dict[int, float | None]:
    n = table.num_rows
    return {k: (pc.sum(pc.cast(table[f"zero_hit@{k}"], pa.int64())).as_py() or 0) / n if n else None for k in ks}


def summarize(
    con: duckdb.DuckDBPyConnection,
    run: str | EvalContext,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = DEFAULT_GAIN,
    split: str | None = None,
    seed: int = 0,
    measures: Sequence[str] = MEASURES,
    per_case: pa.Table | None = None,
    interval: bool = True,
) -> MetricReport:
    """Mean, median, p10, min and a seeded 95% bootstrap interval of every measure@k, over answerable cases.
    ``interval=False`` leaves the interval out (None): the bootstrap is most of the cost once ``per_case`` is
    known, and the TUI shows the other figures while it runs.

    ``per_case``: :func:`ragtriage.metrics.per_case.per_case` of the same run, stage, gain and split at (at least)
    these cutoffs, when the caller has it already (the TUI, which also draws it); computing it is most of the cost.
    """
    ctx = context_of(con, run, ks, stage=stage, gain=gain, split=split)
    unknown = [m for m in measures if m not in MEASURES]
    if unknown:
        raise MetricsError(f"unknown measure(s) {', '.join(unknown)}; use {', '.join(MEASURES)}")
    if per_case is None:
        per_case = per_case_context(con, ctx, counts=False)
    table = given_per_case(per_case, ctx.ks, measures, ["n_relevant", *(f"zero_hit@{k}" for k in ctx.ks)])
    return MetricReport(
        run_id=ctx.run_id,
        threshold=ctx.threshold,
        gain=ctx.gain,
        unit=ctx.unit,
        ks=ctx.ks,
        n_cases=table.num_rows,
        n_without_relevant=int(np.count_nonzero(column_values(table, "n_relevant") == 0)),
        rows=distributions(table, measures, ctx.ks, seed, N_RESAMPLES if interval else 0, ctx.gain),
        zero_hit_rate=zero_hit_rates(table, ctx.ks),
        stage=ctx.stage,
        split=ctx.split,
    )
