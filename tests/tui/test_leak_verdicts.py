"""Leakage verdicts in the TUI: a leaking run FAILS before any figure (Overview's banner, Compare's verdict line
and column), and a run nothing could be checked on says NOT CHECKED, never "none"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.lists import CompareScreen
from tests.factory import make_store
from tests.tui.conftest import CASES, DOCS, LABELS, RUNS
from tests.tui.helpers import pilot_test, settle, static_text

pytestmark = pytest.mark.slow  # pilot tests of seconds each


@pilot_test
async def test_a_leaking_run_fails_first_in_compare(db_path: Path) -> None:
    app = TriageApp(db_path, "hybrid", "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # conftest's q3 retrieves d2#1 (acl hr) for a principal in eng, in both runs; the store has 5 cases, all
        # with a principal
        assert "LEAKAGE FAILS: 1 cases, 1 leaked final results (press l)" in static_text(app, "#sec-leaks")
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.source is not None
        verdicts = static_text(app, "#verdicts")
        assert "bm25 FAILS: leaks in 1 cases" in verdicts and "hybrid FAILS: leaks in 1 cases" in verdicts
        assert screen.source.column_names[1:3] == ["bm25 LEAKS", "hybrid LEAKS"]
        status = static_text(app, "#status")
        assert "│ FAILS (leaks): bm25, hybrid · " in status  # before any figure
        box = screen.query_one("#verdicts")
        assert box.region.bottom <= screen.query_one("#tablebox").region.y  # above every figure


@pilot_test
async def test_no_principal_is_not_checked_never_none(tmp_path: Path) -> None:
    cases = [{k: v for k, v in c.items() if k != "principal"} for c in CASES]
    make_store(tmp_path, cases=cases, labels=LABELS, documents=DOCS, runs=RUNS, db="n.duckdb").close()
    app = TriageApp(tmp_path / "n.duckdb", "hybrid", "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        banner = static_text(app, "#sec-leaks")
        assert "leakage: NOT CHECKED (no principal in any of 5 cases)" in banner and "none" not in banner
        await pilot.press("c")
        await settle(pilot)
        verdicts = static_text(app, "#verdicts")
        assert "leakage NOT CHECKED (no principal): bm25, hybrid" in verdicts
        assert "no leaks" not in verdicts and "FAILS" not in verdicts


@pilot_test
async def test_some_cases_unchecked_are_counted_beside_the_clean_verdict(tmp_path: Path) -> None:
    cases = [dict(c) for c in CASES]
    del cases[0]["principal"]  # q1 cannot be checked
    runs = [{**r, "results": [x for x in r["results"] if x["case_id"] != "q3"]} for r in RUNS]  # the leak gone
    make_store(tmp_path, cases=cases, labels=LABELS, documents=DOCS, runs=runs, db="p.duckdb").close()
    app = TriageApp(tmp_path / "p.duckdb", "hybrid", "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "leakage: none in 4 checked cases; 1 not checked (no principal)" in static_text(app, "#sec-leaks")
        await pilot.press("c")
        await settle(pilot)
        assert "no leaks in 4 of 5 cases checked: bm25, hybrid" in static_text(app, "#verdicts")
