"""An answerable case the run abstained on is a false abstention, its own failure: not a ranking miss, with the
threshold's figures in its evidence and `calibrate` as the advice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragtriage.classify import classify_run
from tests.factory import make_store
from tests.unit.test_classify_locations import DOCUMENTS, case, label, results


@pytest.mark.slow
def test_abstaining_on_an_answerable_case_is_a_false_abstention(tmp_path: Path) -> None:
    cases = [case(c) for c in ("c1", "c2", "c3", "c4", "c5")]
    labels = [label(c, f"F{i}#1", 3) for i, c in enumerate(("c1", "c2", "c3", "c4", "c5"), start=1)]
    rows = (
        results("c2", ["F2#1"], score=0.9)  # found, but the run said insufficient evidence
        + results("c3", ["F3#1"], score=0.2)  # found, below the threshold 0.5: it would abstain
        + results("c4", ["F6#1"], score=0.9)  # timed out: an outage, not an abstention
        + results("c5", ["F5#1"], score=0.8)  # found above the threshold: no failure
    )
    events = [
        {"case_id": "c1", "latency_ms": 5.0, "status": "ok"},  # an empty list that is no outage
        {"case_id": "c2", "latency_ms": 5.0, "status": "insufficient_evidence"},
        {"case_id": "c3", "latency_ms": 5.0, "status": "ok"},
        {"case_id": "c4", "latency_ms": 5000.0, "status": "error", "timed_out": True},
        {"case_id": "c5", "latency_ms": 5.0, "status": "ok"},
    ]
    run: dict[str, Any] = {"run": {"run_id": "r", "k": 2}, "results": rows, "events": events}
    con = make_store(tmp_path, cases=cases, labels=labels, documents=DOCUMENTS, runs=[run])
    con.execute("UPDATE runs SET score_threshold = 0.5 WHERE run_id = 'r'")
    got = {r["case_id"]: r for r in classify_run(con, "r", store=False).to_pylist()}
    abstained = {c: got[c] for c in got if got[c]["failure"] == "false-abstention"}
    assert set(abstained) == {"c1", "c2", "c3"}
    facts = {c: json.loads(r["evidence"])["facts"]["abstention"] for c, r in abstained.items()}
    assert facts["c1"] == {"how": "empty list", "top_score": None, "threshold": 0.5, "n_results": 0}
    assert facts["c2"] == {"how": "insufficient evidence", "top_score": 0.9, "threshold": 0.5, "n_results": 1}
    assert facts["c3"] == {"how": "below threshold", "top_score": 0.2, "threshold": 0.5, "n_results": 1}
    for r in abstained.values():
        assert r["rule"] == "ranking.false-abstention" and r["category"] == "ranking"
        assert any("ragtriage calibrate --run" in e for e in r["experiments"])
    assert got["c4"]["failure"] == "no-relevant-in-top-k" and got["c4"]["rule"] != "ranking.false-abstention"
    assert "c5" not in got
