"""The comparison use cases: one candidate against a baseline (``compare --run``), many runs x many measures
(``compare --runs``, ``report``), each run's leakage and gate failures stated with the figures.

The CLI opens the store, calls one function here and renders what it returns (``app.render``); the TUI reads the
same core functions, so a figure is the same wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

if TYPE_CHECKING:
    from ragtriage.experiments.explain import Explanation
    from ragtriage.experiments.runs_table import RunsComparison
    from ragtriage.experiments.safety import RunSafety
    from ragtriage.gate.compare import Comparison
    from ragtriage.gate.config import GateConfig


@dataclass(frozen=True)
class Changes:
    """What ``where_changed`` found, each part optional: per-slice table and its dimension, category tables."""

    by: str | None = None
    slices: pa.Table | None = None
    categories: pa.Table | None = None
    moved: pa.Table | None = None
    safety: tuple[RunSafety, ...] = ()  # each run's leakage, shown before any figure
    explained: pa.Table | None = None  # ``explain.explain_runs``: each candidate's dropped cases and their causes
    causes: pa.Table | None = None  # cases per (run, measure, cause)
    labels: str = "human only"  # the labels the figures use (``metrics.context.labels_header``)


@dataclass(frozen=True)
class OneComparison:
    """``compare --run``: the comparison, the candidate's and the baseline's leakage, the labels line and, with
    ``--explain``, each drop's cause."""

    result: Comparison
    safety: RunSafety
    baseline_safety: RunSafety
    labels: dict[str, str]
    why: Explanation | None


def compare_many(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str],
    baseline: str,
    measures: Sequence[str],
    *,
    by: str | None,
    split: str | None,
    test: str,
    correction: str,
    alpha: float,
    seed: int,
    resamples: int,
    categories: bool,
    gate: GateConfig | None = None,
    explain: bool = False,
) -> tuple[RunsComparison, Changes]:
    """The runs table, what the caller asked of ``where_changed`` and each run's leakage (and, with ``gate``, the
    gate's failed rules for each candidate)."""
    from ragtriage.experiments.explain import explain_runs
    from ragtriage.experiments.runs_table import DEFAULT_MEASURES, compare_runs
    from ragtriage.experiments.safety import run_safety
    from ragtriage.experiments.where_changed import category_changes, slice_deltas
    from ragtriage.metrics.context import labels_header

    rc = compare_runs(
        con,
        runs,
        baseline,
        measures or DEFAULT_MEASURES,
        split=split,
        test=test,
        correction=correction,
        alpha=alpha,
        seed=seed,
        n_resamples=resamples,
    )
    slices = slice_deltas(con, rc, by) if by else None
    counts, moved = category_changes(con, rc) if categories else (None, None)
    safety = run_safety(con, rc.runs, gate=gate, baseline=rc.baseline)
    explained, causes = explain_runs(con, rc) if explain else (None, None)
    labels = labels_header(con)["labels"]
    return rc, Changes(by, slices, counts, moved, safety, explained=explained, causes=causes, labels=labels)


def compare_one(
    con: duckdb.DuckDBPyConnection,
    run: str,
    baseline: str,
    ks: Sequence[int],
    *,
    by: str | None,
    split: str | None,
    metrics: Sequence[str] | None,
    seed: int,
    resamples: int,
    gate: GateConfig | None = None,
    explain: bool = False,
) -> OneComparison:
    """One candidate on every metric at ``ks`` (or ``metrics``), per slice, with both runs' leakage."""
    from ragtriage.experiments.explain import explain as explain_drops
    from ragtriage.experiments.safety import run_safety
    from ragtriage.gate.compare import compare
    from ragtriage.metrics.context import labels_header

    labels = labels_header(con)
    result = compare(
        con, run, baseline, tuple(ks), by=by, split=split, seed=seed, n_resamples=resamples, metrics=metrics or None
    )
    safety, base_safety = run_safety(con, [run, baseline], gate=gate, baseline=baseline)
    why = explain_drops(con, result) if explain else None
    return OneComparison(result, safety, base_safety, labels, why)
