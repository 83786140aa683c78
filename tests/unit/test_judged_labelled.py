"""Judged (trec_eval: grade >= 0) against labelled (any label: ir_measures' Judged@k), by hand on a grade −1 label."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.contract.relevance import judged_units, labelled_units
from ragtriage.metrics import judged_report, per_case
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, load_inputs


def test_a_grade_minus_one_label_is_labelled_not_judged(tmp_path: Path) -> None:
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_text("1 0 a -1\n1 0 b 0\n1 0 c 2\n")
    run.write_text("1 Q0 a 1 3 x\n1 Q0 b 2 2 x\n1 Q0 d 3 1 x\n")  # a (−1), b (0), d (no label)
    con = connect(":memory:")
    load_inputs(con, LoadRequest(qrels=qrels, runs=[run]))
    # by hand: labelled in the top 3 = a, b (2 of 3 results); judged (grade >= 0) = b alone
    row = per_case(con, "x", (3,)).to_pylist()[0]
    assert row["Judged@3"] == pytest.approx(2 / 3)
    assert row["n_judged_retrieved"] == 2
    report = judged_report(con, "x", 3).to_pylist()[0]
    assert (report["returned"], report["judged"], report["unjudged"]) == (3, 2, 1)
    retrieved = "SELECT case_id, unit_id FROM results WHERE run_id = 'x'"
    counts = [
        con.execute(f"SELECT count(*) FROM ({retrieved}) SEMI JOIN ({q}) USING (case_id, unit_id)").fetchall()
        for q in (labelled_units(), judged_units())
    ]
    assert counts == [[(2,)], [(1,)]]
