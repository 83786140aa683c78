"""A leaking baseline: the gate says so before its rules, and a regression rule compares against the baseline's
figure with its leaked rows earning nothing, both figures shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtriage.gate.config import parse_gate
from ragtriage.gate.reports import to_text
from ragtriage.gate.verdict import evaluate_gate
from tests.factory import make_store
from tests.unit.test_classify_locations import DOCUMENTS, case, label, results
from tests.unit.test_gate_store import backdate


def _run(run_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"run": {"run_id": run_id, "k": 10, "created_at": "2024-06-01T10:00:00Z"}, "results": rows}


@pytest.mark.slow
def test_regression_is_measured_against_the_baseline_without_its_leaked_rows(tmp_path: Path) -> None:
    # C#1 is for group hr only and both cases' principal is staff; c1's relevant units are C#1 and F1#1.
    # base shows C#1 (a leak) at rank 1 of c1, then F1#1; cand ranks F5#1 then F1#1. RR@10 by hand:
    #   base with the leak: c1 1 (C#1), c2 1 -> 1.0; without it: c1 1/2 (F1#1 at 2), c2 1 -> 0.75
    #   cand: c1 1/2, c2 1 -> 0.75. Against the leaked figure Δ = -0.25 (fails); against the honest one Δ = 0.
    gate = tmp_path / "gate.toml"
    gate.write_text('[[regression]]\nmetric = "RR@10"\nsplit = "all"\n')
    backdate(gate)
    con = make_store(
        tmp_path,
        cases=[case("c1"), case("c2")],
        labels=[label("c1", "C#1", 3), label("c1", "F1#1", 3), label("c2", "F2#1", 3)],
        documents=DOCUMENTS,
        runs=[
            _run("base", results("c1", ["C#1", "F1#1"]) + results("c2", ["F2#1"])),
            _run("cand", results("c1", ["F5#1", "F1#1"]) + results("c2", ["F2#1"])),
        ],
    )
    verdict = evaluate_gate(con, parse_gate(gate), "cand", "base")
    reg = next(r for r in verdict.rules if r.kind == "regression")
    assert reg.passed and reg.value == pytest.approx(0.0)
    assert reg.figure.startswith("RR@10 0.7500 (leaked rows removed; 1.0000 with them) → 0.7500, Δ +0.0000")
    assert any("baseline base leaks (1 leaked result row(s))" in n for n in reg.notes)
    assert verdict.notes == (
        "baseline base LEAKS: 1 leaked result row(s), any stage; the regression rules below compare against its "
        "figures with the leaked final rows removed (both figures shown)",
    )
    text = to_text(verdict).splitlines()
    assert text[2] == f"  note: {verdict.notes[0]}" and text[3].startswith("  pass  leakage")
    # the other way round nothing leaks on the baseline's side: figures as they are, and no note
    back = evaluate_gate(con, parse_gate(gate), "base", "cand")
    assert back.notes == ()
    reg = next(r for r in back.rules if r.kind == "regression")
    assert reg.figure.startswith("RR@10 0.7500 → 1.0000, Δ +0.2500")
    assert not next(r for r in back.rules if r.kind == "leakage").passed  # the leaking candidate still fails


@pytest.mark.slow
def test_one_access_rule_anywhere_and_an_unchecked_case_still_fails_leakage(tmp_path: Path) -> None:
    gate = tmp_path / "gate.toml"
    gate.write_text('[[regression]]\nmetric = "RR@10"\nsplit = "all"\n')
    backdate(gate)
    docs = [{"document_id": d, "chunk_id": f"{d}#1", "text": d} for d in ("F1", "F2")]
    runs = [_run(r, results("c1", ["F1#1"])) for r in ("a", "b")]
    plain = [{"id": "c1", "query": "a question"}]
    for acl, passed in ((None, True), (["staff"], False)):
        folder = tmp_path / str(passed)
        folder.mkdir()
        documents = [{**docs[0], **({"acl": acl} if acl else {})}, docs[1]]
        con = make_store(folder, cases=plain, labels=[label("c1", "F1#1", 3)], documents=documents, runs=runs)
        leak = next(r for r in evaluate_gate(con, parse_gate(gate), "a", "b").rules if r.kind == "leakage")
        assert leak.passed is passed and leak.applies is not passed
        if not passed:  # the manifest names an acl: the case without a principal is unchecked, and that fails
            assert "0 of 1 case(s) checked" in leak.figure
        con.close()
