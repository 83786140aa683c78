"""Choosing a run's abstention threshold from the labels, and storing it with that run.

Scores are system-specific (BM25 is unbounded, cosine lives in [-1, 1], rerankers emit logits), so a threshold
belongs to one run and is never shared. Two score populations are read from the store:

* **answerable** — cases expecting evidence whose rank-1 final result is relevant (qrels grade >= the dataset's
  relevance threshold): the scores a threshold must keep;
* **negatives** — cases whose expected_behavior is not ``evidence``: the scores it should cut (a negative with no
  results always counts as abstained).

The top score of a case is its highest final-stage score. A case is kept when ``top >= threshold`` and abstains
when ``top < threshold`` (the same comparison ``negative_outcomes`` uses). Only answerable scores are worth
testing as thresholds: between two of them, the higher one cuts at least as many negatives and keeps the same
answerable cases. ``--target-recall r`` picks the highest threshold that keeps at least ``r`` of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from ragtriage.checks.negatives import NEGATIVE, TOP_SCORES
from ragtriage.contract.relevance import is_relevant
from ragtriage.store import require_run

DEFAULT_TARGET_RECALL = 0.95


class CalibrationError(ValueError):
    """The labels give nothing to calibrate against (no answerable case with a relevant, scored top result)."""


@dataclass(frozen=True)
class Calibration:
    run_id: str
    table: pa.Table  # threshold, answerable_kept, answerable_total, kept_rate, negatives_abstained, ...
    threshold: float
    target_recall: float | None  # None when the threshold was given
    answerable_kept: int
    answerable_total: int
    negatives_abstained: int
    negatives_total: int
    excluded: int  # answerable cases left out: top result not relevant, no results, or no score
    split: str | None

    @property
    def kept_rate(self) -> float:
        return self.answerable_kept / self.answerable_total

    @property
    def abstained_rate(self) -> float:
        return self.negatives_abstained / self.negatives_total if self.negatives_total else math.nan


_POPULATIONS_SQL = f"""WITH {TOP_SCORES},
scored AS (
    SELECT c.case_id, c.{NEGATIVE} AS negative, f.top_score,
           coalesce({is_relevant("q.grade")}, false) AS top_relevant
    FROM cases c
    LEFT JOIN final_lists f USING (case_id)
    LEFT JOIN qrels q ON q.case_id = c.case_id AND q.unit_id = f.top_unit
    WHERE $split IS NULL OR c.split = $split
)
SELECT negative, top_relevant AND top_score IS NOT NULL AS usable, top_score FROM scored
"""


def _populations(con: duckdb.DuckDBPyConnection, run_id: str, split: str | None) -> tuple[np.ndarray, np.ndarray, int]:
    """(answerable top scores, negative top scores with NaN for no results, answerable cases excluded)."""
    t = con.sql(_POPULATIONS_SQL, params={"run_id": run_id, "split": split}).to_arrow_table()
    negative = t["negative"].to_numpy().astype(bool)
    usable = t["usable"].to_numpy().astype(bool)
    scores = t["top_score"].cast(pa.float64()).to_numpy().astype(float)  # nulls (no results) become NaN
    positives = np.sort(scores[~negative & usable])
    return positives, scores[negative], int((~negative & ~usable).sum())


def _counts(positives: np.ndarray, negatives: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Answerable kept (top >= t) and negatives abstained (top < t, or no results) for each threshold."""
    kept = len(positives) - np.searchsorted(positives, thresholds, side="left")
    scored_neg = np.sort(negatives[~np.isnan(negatives)])
    abstained = np.searchsorted(scored_neg, thresholds, side="left") + int(np.isnan(negatives).sum())
    return kept, abstained


def calibrate(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    target_recall: float | None = DEFAULT_TARGET_RECALL,
    threshold: float | None = None,
    split: str | None = None,
) -> Calibration:
    """The trade-off table of ``run_id`` and the threshold chosen from it (or the one given).

    ``split`` restricts both populations to one split (calibrate on ``dev``, judge on ``holdout``).
    """
    require_run(con, run_id)
    if target_recall is not None and not 0.0 < target_recall <= 1.0:
        raise CalibrationError(f"target recall must be in (0, 1], got {target_recall}")
    positives, negatives, excluded = _populations(con, run_id, split)
    if len(positives) == 0:
        raise CalibrationError(
            f"run {run_id!r}: no answerable case has a relevant, scored top result; nothing to calibrate against"
        )
    candidates = np.unique(positives)[::-1]
    kept, abstained = _counts(positives, negatives, candidates)
    table = pa.table(
        {
            "threshold": candidates,
            "answerable_kept": kept,
            "answerable_total": np.full(len(candidates), len(positives)),
            "kept_rate": kept / len(positives),
            "negatives_abstained": abstained,
            "negatives_total": np.full(len(candidates), len(negatives)),
            "abstained_rate": abstained / len(negatives) if len(negatives) else np.full(len(candidates), np.nan),
        }
    )
    if threshold is None:
        goal = target_recall if target_recall is not None else DEFAULT_TARGET_RECALL
        # kept grows as the threshold falls: the first candidate reaching the goal is the highest such threshold
        chosen = float(candidates[int(np.argmax(kept >= math.ceil(goal * len(positives) - 1e-9)))])
    else:
        chosen, goal = float(threshold), None
    k, a = _counts(positives, negatives, np.asarray([chosen]))
    return Calibration(
        run_id=run_id,
        table=table,
        threshold=chosen,
        target_recall=goal if threshold is None else None,
        answerable_kept=int(k[0]),
        answerable_total=len(positives),
        negatives_abstained=int(a[0]),
        negatives_total=len(negatives),
        excluded=excluded,
        split=split,
    )


def store_threshold(con: duckdb.DuckDBPyConnection, run_id: str, threshold: float) -> None:
    """Record ``threshold`` as ``run_id``'s score threshold (one per run; calibrating again replaces it)."""
    require_run(con, run_id)
    if not math.isfinite(threshold):
        raise CalibrationError(f"threshold must be a finite number, got {threshold}")
    con.execute("UPDATE runs SET score_threshold = ? WHERE run_id = ?", [threshold, run_id])
