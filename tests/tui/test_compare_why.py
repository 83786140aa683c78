"""The Compare view's `w`: each dropped case's cause as a column, the cases per cause and the highlighted case's
facts below the list (a hostile unit id shown literally), at 80x24; `w` again restores the Δ distribution.

The store and its causes are tests/unit/test_explain.py's, derived there by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.lists import CompareScreen
from ragtriage.tui.widgets.plots import DeltaHistogram
from tests.tui.helpers import pilot_test, settle, static_text, until
from tests.unit.test_explain import db  # noqa: F401  (fixture)


@pytest.mark.slow
@pilot_test
async def test_w_shows_each_drop_cause(db: Path) -> None:  # noqa: F811
    app = TriageApp(db, "cand", "base", author="t")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.shown is not None
        assert "cause" not in screen.shown.column_names
        await pilot.press("w")
        await settle(pilot)
        await until(lambda: "cause" in screen.shown.column_names)  # type: ignore[union-attr]
        assert screen.shown.column_names == ["case_id", "base", "cand", "Δ", "cause", "solo", "query"]
        rows = screen.shown.select(["case_id", "cause"]).to_pylist()
        causes = {r["case_id"]: r["cause"] for r in rows}
        assert causes == {
            "qa": "candidate-miss",
            "qb": "unjudged-displacement",
            "qc": "tie-order",
            "qd": "rerank-inversion",
            "qf": "other",
            "qe": "",  # did not drop
        }
        assert not screen.query_one(DeltaHistogram).display
        why = static_text(app, "#why")
        assert "nDCG@2 drops by cause:" in why and "candidate-miss 1" in why and "other 1" in why
        assert "qa candidate-miss: 1 relevant unit(s)" in why  # the cursor's case
        await pilot.press("j")  # qb: the unlabelled unit is hostile text
        await settle(pilot)
        why = static_text(app, "#why")
        assert "\x1b" not in why and "␛[2J[bold]=HYPERLINK" in why
        await pilot.press("w")
        await settle(pilot)
        await until(lambda: "cause" not in screen.shown.column_names)  # type: ignore[union-attr]
        assert screen.query_one("#stats").display and not screen.query_one(DeltaHistogram).display
        await pilot.press("v")  # the Δ distribution in place of the figures
        await settle(pilot)
        assert screen.query_one(DeltaHistogram).display and not screen.query_one("#stats").display
