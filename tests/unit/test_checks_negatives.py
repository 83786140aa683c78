"""Negative cases by expected_behavior, and the per-run threshold calibrated from the labels (hand-computed)."""

from __future__ import annotations

import math

import duckdb
import pytest

from ragtriage.checks import CalibrationError, calibrate, negative_outcomes, store_threshold
from tests.factory import make_store

DOCS = [{"document_id": f"D{i}", "chunk_id": f"D{i}#1", "acl": ["all"]} for i in range(5)]
NEG = {"answerable": False}
CASES = [
    {"id": "a0", "query": "q", "split": "dev"},
    {"id": "a1", "query": "q"},
    {"id": "a2", "query": "q"},
    {"id": "a3", "query": "q"},  # its top result is not relevant: left out of calibration
    {"id": "below", "query": "q", "expected_behavior": "below_threshold", "split": "dev", **NEG},
    {"id": "below-eq", "query": "q", "expected_behavior": "below_threshold", **NEG},
    {"id": "empty-ok", "query": "q", "expected_behavior": "empty", **NEG},
    {"id": "empty-timeout", "query": "q", "expected_behavior": "empty", **NEG},
    {"id": "empty-results", "query": "q", "expected_behavior": "empty", **NEG},
    {"id": "insuff", "query": "q", "expected_behavior": "insufficient_evidence", **NEG},
    {"id": "insuff-bad", "query": "q", "expected_behavior": "insufficient_evidence", **NEG},
]
LABELS = [{"case_id": f"a{i}", "document_id": f"D{i}", "chunk_id": f"D{i}#1", "grade": 3} for i in range(3)]


def res(case: str, d: int, score: float, rank: int = 1) -> dict:
    return {"case_id": case, "rank": rank, "document_id": f"D{d}", "chunk_id": f"D{d}#1", "score": score}


RESULTS = [
    res("a0", 0, 9.0),
    res("a1", 1, 5.0),
    res("a1", 4, 1.0, rank=2),
    res("a2", 2, 2.0),
    res("a3", 4, 7.0),
    res("below", 4, 4.0),
    res("below-eq", 4, 5.0),
    res("empty-results", 4, 1.0),
    res("insuff", 4, 6.0),
    res("insuff-bad", 4, 3.0),
]
EVENTS = [
    {"case_id": "empty-ok", "status": "ok", "empty": True},
    {"case_id": "empty-timeout", "timed_out": True, "empty": True},
    {"case_id": "insuff", "status": "insufficient_evidence"},
    {"case_id": "insuff-bad", "status": "ok"},
]


@pytest.fixture
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return make_store(
        tmp_path_factory.mktemp("neg"),
        cases=CASES,
        labels=LABELS,
        documents=DOCS,
        runs=[{"run": {"run_id": "r", "k": 10}, "results": RESULTS, "events": EVENTS}],
    )


def outcomes(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[bool, str]]:
    return {r["case_id"]: (r["passed"], r["reason"]) for r in negative_outcomes(con, "r").to_pylist()}


def test_each_behavior_passes_and_fails_before_calibration(con: duckdb.DuckDBPyConnection) -> None:
    assert outcomes(con) == {
        "below": (False, "no calibrated threshold for this run: run `ragtriage calibrate`"),
        "below-eq": (False, "no calibrated threshold for this run: run `ragtriage calibrate`"),
        "empty-ok": (True, "controlled empty result"),
        "empty-timeout": (False, "empty because the call timed out, not a controlled empty result"),
        "empty-results": (False, "returned 1 result(s); expected none"),
        "insuff": (True, "event status insufficient_evidence"),
        "insuff-bad": (False, "event status ok; expected insufficient_evidence"),
    }


def test_trade_off_table(con: duckdb.DuckDBPyConnection) -> None:
    # answerable top scores 9, 5, 2; negatives 4, 5, 1, 6, 3 and two without results (always abstained)
    cal = calibrate(con, "r")
    rows = [(r["threshold"], r["answerable_kept"], r["negatives_abstained"]) for r in cal.table.to_pylist()]
    assert rows == [(9.0, 1, 7), (5.0, 2, 5), (2.0, 3, 3)]
    assert (cal.answerable_total, cal.negatives_total, cal.excluded) == (3, 7, 1)


@pytest.mark.parametrize(
    ("target", "chosen", "kept", "abstained"), [(0.95, 2.0, 3, 3), (0.6, 5.0, 2, 5), (0.3, 9.0, 1, 7), (1.0, 2.0, 3, 3)]
)
def test_target_recall_picks_highest_threshold_keeping_enough(
    con: duckdb.DuckDBPyConnection, target: float, chosen: float, kept: int, abstained: int
) -> None:
    cal = calibrate(con, "r", target_recall=target)
    assert (cal.threshold, cal.answerable_kept, cal.negatives_abstained) == (chosen, kept, abstained)


def test_given_threshold_is_reported_not_chosen(con: duckdb.DuckDBPyConnection) -> None:
    cal = calibrate(con, "r", threshold=4.5)
    assert (cal.threshold, cal.target_recall, cal.answerable_kept, cal.negatives_abstained) == (4.5, None, 2, 5)


def test_stored_threshold_judges_below_threshold_cases(con: duckdb.DuckDBPyConnection) -> None:
    store_threshold(con, "r", calibrate(con, "r", target_recall=0.6).threshold)
    assert con.execute("SELECT score_threshold FROM runs WHERE run_id = 'r'").fetchall() == [(5.0,)]
    got = outcomes(con)
    assert got["below"] == (True, "top score 4.0 < threshold 5.0")
    assert got["below-eq"] == (False, "top score 5.0 >= threshold 5.0")


def test_split_restricts_both_populations(con: duckdb.DuckDBPyConnection) -> None:
    cal = calibrate(con, "r", split="dev")
    assert cal.table.to_pylist() == [
        {
            "threshold": 9.0,
            "answerable_kept": 1,
            "answerable_total": 1,
            "kept_rate": 1.0,
            "negatives_abstained": 1,
            "negatives_total": 1,
            "abstained_rate": 1.0,
        }
    ]


def test_nothing_to_calibrate_against_is_an_error(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(CalibrationError, match="no answerable case"):
        calibrate(con, "r", split="holdout")
    with pytest.raises(CalibrationError, match="finite"):
        store_threshold(con, "r", math.nan)
    with pytest.raises(CalibrationError, match="target recall"):
        calibrate(con, "r", target_recall=0.0)
