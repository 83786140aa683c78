"""How far the judge agrees with the people on units they graded, before any judged label is used.

On the calibration pairs whose answer parsed: Cohen's kappa on the dataset's grade scale, quadratic-weighted kappa,
kappa after binarising both raters at the dataset's relevance threshold (``contract.relevance``), the confusion
matrix (rows: people, columns: judge), precision and recall of each grade, the two grade distributions (a judge
that over-rates puts more mass on the high grades), and the raw agreement beside the majority-class baseline (the
agreement of always answering the people's most frequent grade; any constant rater has kappa 0).

Every figure carries a seeded 95% bootstrap interval from ``metrics.distribution.bootstrap_means``, the package's
one bootstrap: each pair is a one-hot row over the confusion matrix's cells, so a resample's mean row *is* that
resample's confusion matrix (as proportions), and every statistic is recomputed from it. Kappa is
``annotate.agreement.kappa``, the one the ``agreement`` command prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.annotate.agreement import confusion_matrix, kappas
from ragtriage.metrics.distribution import CONFIDENCE, N_RESAMPLES, bootstrap_means

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Figure:
    value: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Calibration:
    pairs: int  # calibration pairs asked about
    graded: int  # whose answer parsed (the figures are over these)
    unparsed: int
    unanswered: int  # no answer (request failed, budget spent, interrupted)
    grades: tuple[int, ...]
    threshold: int
    kappa: Figure
    kappa_quadratic: Figure
    kappa_binary: Figure
    agreement: Figure
    majority_agreement: Figure  # the majority-class baseline's raw agreement
    majority_grade: int | None
    confusion: list[list[int]]  # rows: people's grade, columns: judge's grade
    precision: dict[int, Figure]
    recall: dict[int, Figure]
    human_share: dict[int, Figure]
    judge_share: dict[int, Figure]
    seed: int

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        for name in ("precision", "recall", "human_share", "judge_share"):
            out[name] = {str(g): v for g, v in out[name].items()}
        return out


def _binary(m: Matrix, cut: int) -> Matrix:
    """The 2x2 matrices of a stack of grade matrices with grades at index >= ``cut`` relevant."""
    lo, hi = slice(None, cut), slice(cut, None)
    return np.stack([m[:, r, c].sum(axis=(1, 2)) for r in (lo, hi) for c in (lo, hi)], axis=1).reshape(-1, 2, 2)


def _stats(m: Matrix, cut: int, majority: int) -> dict[str, Matrix]:
    """Every figure of each confusion matrix of a stack (counts or proportions), NaN where undefined."""
    n = m.sum(axis=(1, 2))
    rows, cols, diag = m.sum(axis=2), m.sum(axis=1), np.diagonal(m, axis1=1, axis2=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {
            "kappa": kappas(m),
            "kappa_quadratic": kappas(m, "quadratic"),
            "kappa_binary": kappas(_binary(m, cut)),
            "agreement": diag.sum(axis=1) / n,
            "majority_agreement": rows[:, majority] / n,
        }
        for i in range(m.shape[1]):
            out[f"precision{i}"] = diag[:, i] / cols[:, i]
            out[f"recall{i}"] = diag[:, i] / rows[:, i]
            out[f"human{i}"] = rows[:, i] / n
            out[f"judge{i}"] = cols[:, i] / n
    return out


def calibration(
    answered: pa.Table, grades: tuple[int, ...], threshold: int, *, seed: int = 0, resamples: int = N_RESAMPLES
) -> Calibration:
    """The calibration report of ``answered`` (calibration pairs with ``human_grade``, the judge's ``grade`` and
    ``answered``)."""
    ok = answered.filter(pc.is_valid(answered.column("grade")))
    unanswered = answered.num_rows - int(pc.sum(answered.column("answered")).as_py() or 0)
    human = ok.column("human_grade").to_numpy(zero_copy_only=False).astype(np.int64)
    judge = ok.column("grade").to_numpy(zero_copy_only=False).astype(np.int64)
    m = confusion_matrix(human, judge, grades)
    k = len(grades)
    cut = max(0, min(k, threshold - grades[0]))
    majority = int(np.argmax(m.sum(axis=1))) if len(human) else 0
    point = _stats(m[None].astype(np.float64), cut, majority)
    lows, highs = _intervals(
        human - grades[0], judge - grades[0], k, lambda p: _stats(p, cut, majority), seed, resamples
    )

    def fig(name: str) -> Figure:
        value = float(point[name][0])
        return Figure(None if math.isnan(value) else value, lows.get(name), highs.get(name))

    return Calibration(
        pairs=answered.num_rows,
        graded=ok.num_rows,
        unparsed=answered.num_rows - ok.num_rows - unanswered,
        unanswered=unanswered,
        grades=grades,
        threshold=threshold,
        kappa=fig("kappa"),
        kappa_quadratic=fig("kappa_quadratic"),
        kappa_binary=fig("kappa_binary"),
        agreement=fig("agreement"),
        majority_agreement=fig("majority_agreement"),
        majority_grade=grades[majority] if len(human) else None,
        confusion=m.tolist(),
        precision={g: fig(f"precision{i}") for i, g in enumerate(grades)},
        recall={g: fig(f"recall{i}") for i, g in enumerate(grades)},
        human_share={g: fig(f"human{i}") for i, g in enumerate(grades)},
        judge_share={g: fig(f"judge{i}") for i, g in enumerate(grades)},
        seed=seed,
    )


def _intervals(
    human: npt.NDArray[np.int64],
    judge: npt.NDArray[np.int64],
    k: int,
    stats: Callable[[Matrix], dict[str, Matrix]],
    seed: int,
    resamples: int,
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """Percentile intervals of every statistic over resampled confusion matrices (pairs drawn with replacement)."""
    n = len(human)
    if n == 0:
        return {}, {}
    onehot = np.zeros((n, k * k), dtype=np.float64)
    onehot[np.arange(n), human * k + judge] = 1.0
    cells = bootstrap_means(onehot, resamples, np.random.default_rng(seed))  # (B, k*k) proportions
    tail = (1.0 - CONFIDENCE) / 2.0 * 100.0
    lows: dict[str, float | None] = {}
    highs: dict[str, float | None] = {}
    for name, values in stats(cells.reshape(-1, k, k)).items():
        arr = values[~np.isnan(values)]
        if arr.size == 0:
            lows[name] = highs[name] = None
            continue
        lo, hi = np.percentile(arr, [tail, 100.0 - tail])
        lows[name], highs[name] = float(lo), float(hi)
    return lows, highs


def figure_rows(cal: Calibration) -> pa.Table:
    """The kappas, raw agreement and the majority baseline, one row each with its interval."""
    names = ["kappa", "kappa_quadratic", "kappa_binary", "agreement", "majority_agreement"]
    figs = [getattr(cal, n) for n in names]
    shown = [
        f"Cohen's kappa ({len(cal.grades)} grades)",
        "quadratic-weighted kappa",
        f"kappa at grade >= {cal.threshold} (binary)",
        "raw agreement",
        f"majority-class baseline (always {cal.majority_grade})",
    ]
    return pa.table(
        {
            "statistic": shown,
            "value": [f.value for f in figs],
            "ci_low": [f.ci_low for f in figs],
            "ci_high": [f.ci_high for f in figs],
        }
    )


def grade_rows(cal: Calibration) -> pa.Table:
    """Per grade: precision, recall and both grade shares, each with its interval as ``low..high``."""
    cols: dict[str, list[Any]] = {"grade": list(cal.grades)}
    for name in ("precision", "recall", "human_share", "judge_share"):
        figs = getattr(cal, name)
        cols[name] = [figs[g].value for g in cal.grades]
        cols[f"{name}_ci"] = [
            None if figs[g].ci_low is None else f"{figs[g].ci_low:.3f}..{figs[g].ci_high:.3f}" for g in cal.grades
        ]
    return pa.table(cols)


def confusion_rows(cal: Calibration) -> pa.Table:
    """The confusion matrix as a table: one row per people's grade, one column per judge's grade."""
    cols: dict[str, list[Any]] = {"people \\ judge": [str(g) for g in cal.grades]}
    for j, g in enumerate(cal.grades):
        cols[str(g)] = [row[j] for row in cal.confusion]
    return pa.table(cols)
