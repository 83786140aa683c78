"""Many runs x many measures against one baseline, in one table, with the significance corrected over the table.

Every run is evaluated on the same paired cases (``gate.compare.paired_matrix``: the cases of the shared
dataset version, one split when asked, that have at least one relevant unit), so that each mean, interval and
test is over identical queries. Per (run, measure): the mean and its 95% percentile-bootstrap interval (one set
of resamples shared by every column); per (candidate, measure) against the baseline: the mean difference, its
interval, wins/ties/losses and the p-value of ``gate.significance.paired_tests`` (what ``compare --run`` and the
gate print for the same pair), or of another paired test (``paired``), and that p-value corrected over all
comparisons of the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ragtriage.arrays import table_of
from ragtriage.experiments.config_diff import ConfigDiff, config_diffs
from ragtriage.gate import sources
from ragtriage.gate.compare import SEED, TEST_RESAMPLES, method, paired_matrix
from ragtriage.gate.significance import CORRECTIONS, INTERVAL_RESAMPLES, TESTS, adjust, paired_pvalues, paired_tests
from ragtriage.metrics.distribution import CONFIDENCE, bootstrap_means

BOOTSTRAP_RESAMPLES = INTERVAL_RESAMPLES
__all__ = ["BOOTSTRAP_RESAMPLES", "RunsComparison", "compare_runs", "paired_matrix", "table_from_values"]
DEFAULT_MEASURES = ("nDCG@10", "R@10", "RR@10")


@dataclass(frozen=True)
class RunsComparison:
    """The table (one row per run and measure, baseline first) and the per-case values it was computed from.

    ``values`` is n_cases x n_runs x n_measures, aligned with ``case_ids``, ``runs`` and ``measures``.
    """

    runs: tuple[str, ...]
    baseline: str
    measures: tuple[str, ...]
    dataset_version: str
    split: str | None
    test: str
    correction: str
    alpha: float
    n_comparisons: int
    seed: int
    n_resamples: int
    table: pa.Table
    case_ids: pa.Array
    values: npt.NDArray[np.float64]
    configs: tuple[ConfigDiff, ...]

    @property
    def n_cases(self) -> int:
        return int(self.values.shape[0])

    @property
    def candidates(self) -> tuple[str, ...]:
        return self.runs[1:]

    def config_of(self, run_id: str) -> ConfigDiff:
        return next(c for c in self.configs if c.run_id == run_id)

    def method(self) -> str:
        """The sentence every rendering prints under the table (the paired part is ``gate.compare.method``'s)."""
        return (
            f"{method(n_resamples=self.n_resamples, seed=self.seed, test=TESTS[self.test])}; p corrected by "
            f"{CORRECTIONS[self.correction]} over {self.n_comparisons} comparisons "
            f"({len(self.candidates)} runs x {len(self.measures)} measures), alpha {self.alpha}; "
            f"each run's mean with a {int(CONFIDENCE * 100)}% percentile bootstrap interval "
            f"({BOOTSTRAP_RESAMPLES} resamples); {self.n_cases} paired cases (the cases of each run's figures)"
        )

    def per_case(self) -> pa.Table:
        """Long per-case table: case_id, run_id, measure, value, delta (against the baseline on that case)."""
        n, r, m = self.values.shape
        delta = self.values - self.values[:, :1, :]
        ids = np.asarray(self.case_ids.to_pylist(), dtype=object)
        columns = {
            "case_id": np.repeat(ids, r * m),
            "run_id": np.tile(np.repeat(np.array(self.runs, dtype=object), m), n),
            "measure": np.tile(np.array(self.measures, dtype=object), n * r),
            "value": self.values.reshape(-1),
            "delta": delta.reshape(-1),
        }
        return table_of(columns, PER_CASE_SCHEMA)


def _ordered_runs(runs: Sequence[str], baseline: str) -> tuple[str, ...]:
    ordered = tuple(dict.fromkeys([baseline, *runs]))
    if len(ordered) < 2:
        raise ValueError(f"give at least one run besides the baseline {baseline!r}")
    return ordered


def measure_names(measures: Sequence[str]) -> tuple[str, ...]:
    """Canonical ir_measures names of ``measures`` (``MRR@10`` → ``RR@10``), duplicates dropped, order kept."""
    from ragtriage.metrics.measures import parse_measures

    return tuple(dict.fromkeys(str(m) for m in parse_measures(measures)))


def _intervals(
    x: npt.NDArray[np.float64], boot: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Percentile interval of each column's bootstrapped means (NaN for fewer than two cases)."""
    if x.shape[0] < 2:
        nan = np.full(x.shape[1], np.nan)
        return nan, nan
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def table_from_values(
    runs: Sequence[str],
    measures: Sequence[str],
    values: npt.NDArray[np.float64],
    *,
    test: str = "randomization",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = SEED,
    n_resamples: int = TEST_RESAMPLES,
) -> tuple[pa.Table, int]:
    """The pure part of ``compare_runs``: (table, number of comparisons corrected over) from per-case values."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; use one of {', '.join(CORRECTIONS)}")
    n, r, m = values.shape
    x = values.reshape(n, r * m)
    boot = bootstrap_means(x, BOOTSTRAP_RESAMPLES, np.random.default_rng(seed)) if n >= 2 else np.empty((0, r * m))
    low, high = _intervals(x, boot)
    cand = x[:, m:]
    base = np.tile(x[:, :m], (1, r - 1))
    stats = paired_tests(cand, base, seed=seed, n_resamples=n_resamples)
    p, exact = (
        (np.array([s.p_value for s in stats]), np.array([s.exact for s in stats]))
        if test == "randomization" and n >= 2
        else paired_pvalues(cand, base, test, n_resamples=n_resamples, seed=seed)
    )
    p_adj = adjust(p, correction)
    nan = np.full(m, np.nan)  # the baseline's rows have no comparison

    def with_base(v: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
        return np.concatenate([nan, np.asarray(v, dtype=np.float64)])

    columns: dict[str, npt.NDArray[Any]] = {
        "run_id": np.repeat(np.array(runs, dtype=object), m),
        "measure": np.tile(np.array(measures, dtype=object), r),
        "n": np.full(r * m, float(n)),
        "mean": x.mean(axis=0) if n else np.full(r * m, np.nan),
        "ci_low": low,
        "ci_high": high,
        "delta": with_base(np.array([s.mean_diff for s in stats])),
        "delta_ci_low": with_base(np.array([s.ci_low for s in stats])),
        "delta_ci_high": with_base(np.array([s.ci_high for s in stats])),
        "wins": with_base(np.array([s.wins for s in stats])),
        "ties": with_base(np.array([s.ties for s in stats])),
        "losses": with_base(np.array([s.losses for s in stats])),
        "p_value": with_base(p),
        "p_adjusted": with_base(p_adj),
        "significant": with_base(np.where(np.isnan(p_adj), np.nan, p_adj < alpha)),
        "exact": with_base(exact),
    }
    return table_of(columns, TABLE_SCHEMA), int(np.count_nonzero(~np.isnan(p)))


PER_CASE_SCHEMA = pa.schema(
    [
        ("case_id", pa.string()),
        ("run_id", pa.string()),
        ("measure", pa.string()),
        ("value", pa.float64()),
        ("delta", pa.float64()),
    ]
)
TABLE_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("measure", pa.string()),
        ("n", pa.int64()),
        ("mean", pa.float64()),
        ("ci_low", pa.float64()),
        ("ci_high", pa.float64()),
        ("delta", pa.float64()),
        ("delta_ci_low", pa.float64()),
        ("delta_ci_high", pa.float64()),
        ("wins", pa.int64()),
        ("ties", pa.int64()),
        ("losses", pa.int64()),
        ("p_value", pa.float64()),
        ("p_adjusted", pa.float64()),
        ("significant", pa.bool_()),
        ("exact", pa.bool_()),
    ]
)


def compare_runs(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str],
    baseline: str,
    measures: Sequence[str] = DEFAULT_MEASURES,
    *,
    split: str | None = None,
    test: str = "randomization",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = SEED,
    n_resamples: int = TEST_RESAMPLES,
) -> RunsComparison:
    """Compare every run of ``runs`` with ``baseline`` on every measure (ir_measures names such as ``nDCG@10``,
    ``AP``, ``P(rel=3)@5``; trec_eval names such as ``ndcg_cut_10`` too).

    Raises StoreError for an unknown run or runs of different dataset versions, ValueError (MeasureError) for an
    unknown measure, test or correction.
    """
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; use one of {', '.join(TESTS)}")
    names = measure_names(measures)
    ordered = _ordered_runs(runs, baseline)
    version = ""
    for run in ordered[1:]:
        version = sources.paired_version(con, run, baseline)
    case_ids, values = paired_matrix(con, ordered, names, split)
    table, n_comparisons = table_from_values(
        ordered, names, values, test=test, correction=correction, alpha=alpha, seed=seed, n_resamples=n_resamples
    )
    return RunsComparison(
        runs=ordered,
        baseline=baseline,
        measures=names,
        dataset_version=version,
        split=split,
        test=test,
        correction=correction,
        alpha=alpha,
        n_comparisons=n_comparisons,
        seed=seed,
        n_resamples=n_resamples,
        table=table,
        case_ids=case_ids,
        values=values,
        configs=tuple(config_diffs(con, list(ordered), baseline)),
    )
