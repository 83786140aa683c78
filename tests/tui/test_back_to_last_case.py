"""Escape from the case screen returns the list to the case shown last: after n/p there, and in a list that was
sorted or searched before Enter, the cursor rests on that case's row, not on the row Enter was pressed on."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.table_view import CaseListScreen
from tests.tui.helpers import pilot_test, settle

pytestmark = pytest.mark.slow


async def _cursor_case(pilot: object, app: TriageApp) -> str | None:
    await settle(pilot)  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, CaseListScreen)
    return screen.cursor_case()


@pilot_test
async def test_escape_returns_to_the_case_last_shown(db_path: Path) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="t")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        first = await _cursor_case(pilot, app)
        screen = app.screen
        assert isinstance(screen, CaseListScreen)
        order = screen.case_ids()
        assert len(order) >= 3 and first == order[0]
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("n", "n")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen) and app.screen.case_id == order[2]
        await pilot.press("escape")
        assert await _cursor_case(pilot, app) == order[2]
        await pilot.press("T")  # reverse sort: the list's order changes
        now = await _cursor_case(pilot, app)
        listed = screen.case_ids()
        at = listed.index(str(now))
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("p" if at > 0 else "n")
        await settle(pilot)
        shown = app.screen.case_id  # type: ignore[attr-defined]
        assert shown != now
        await pilot.press("escape")
        assert await _cursor_case(pilot, app) == shown
        await pilot.press("k" if listed.index(str(shown)) > 0 else "j")  # the user moves on, then a modal
        moved = await _cursor_case(pilot, app)
        assert moved != shown
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("escape")  # back from the modal: the cursor stays where the user put it
        assert await _cursor_case(pilot, app) == moved
