"""Every list keeps its highlighted row on screen: after a sort, a filter, a search or a reload the cursor is on
the same case when it is still listed (else the first row), scrolled into view at 80×24; a triage key then saves
for that case, names it, and the case is still the highlighted one. On the sample (a real FILE store), whose
lists are longer than the screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtriage.notes import NotesStore
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.failures import FailuresScreen
from ragtriage.tui.screens.lists import SlicesScreen
from ragtriage.tui.screens.table_view import TableScreen
from tests.factory import load_sample
from tests.tui.helpers import pilot_test, settle

pytestmark = pytest.mark.slow  # pilot tests of seconds each


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("sample") / "s.duckdb", ("bm25", "hybrid-rerank", "no-acl-filter"))


class RecordingApp(TriageApp):
    """Keeps every notification's text (a toast expires after 2 s, before a busy machine's test reads it)."""

    def notify(self, message: str, **kwargs: Any) -> None:
        self.toasts.append(message)
        super().notify(message, **kwargs)

    toasts: list[str] = []


def make_app(db: Path, tmp_path: Path, run: str = "hybrid-rerank") -> RecordingApp:
    baseline = "bm25" if run != "bm25" else "hybrid-rerank"
    app = RecordingApp(db, run, baseline, author="tester", notes_path=tmp_path / "notes.sqlite")
    app.toasts = []
    return app


def on_screen(app: TriageApp) -> str:
    """The highlighted case (or slice), after checking that its row is drawn inside the screen."""
    screen = app.screen
    assert isinstance(screen, TableScreen)
    table = screen.table_widget()
    assert table is not None and table.show_cursor
    assert table.cursor_visible(), f"row {table.cursor_row} is not among rows {table.scroll_y}+{table.rows_in_view()}"
    y = table.region.y + 1 + table.cursor_row - round(table.scroll_y)  # 1: the header row
    assert table.region.y < y < min(table.region.bottom, app.size.height), (y, table.region)
    key = screen.cursor_key()
    assert key is not None
    return str(key)


async def triage(pilot: Any, app: RecordingApp, key: str, category: str) -> str:
    """Press a category key: it saves for the highlighted case, the toast names it, and it stays highlighted."""
    case = on_screen(app)
    await pilot.press(key)
    await settle(pilot)
    note = NotesStore(app.store.path).get(app.run_id, case)
    assert note is not None and note.category == category
    assert f"saved {case}: {category}" in [t.split(" / ")[0] for t in app.toasts]
    assert on_screen(app) == case
    return case


@pilot_test
async def test_failures_sort_filter_search_reload_keep_the_case_on_screen(sample_db: Path, tmp_path: Path) -> None:
    app = make_app(sample_db, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FailuresScreen) and screen.shown is not None
        first = on_screen(app)
        await pilot.press("t", "t", "t", "t")  # sort by rule: the first case moves far below the first screen
        await settle(pilot)
        assert screen.sort_column == "rule"
        table = screen.table_widget()
        assert table is not None and table.cursor_row >= table.rows_in_view()
        assert on_screen(app) == first
        assert await triage(pilot, app, "2", "ingestion") == first

        await pilot.press("a")  # filter by the first automatic category: the case leaves the list, cursor on top
        await settle(pilot)
        assert screen.filters["_auto"] is not None and screen.shown is not None
        listed = screen.case_ids()
        assert on_screen(app) == (first if first in listed else listed[0])
        await triage(pilot, app, "3", "ranking")

        await pilot.press("x", "j", "j", "j")
        await settle(pilot)
        kept = on_screen(app)
        await pilot.press("slash", *kept[:3])  # a search the highlighted case matches keeps it
        await settle(pilot)
        assert on_screen(app) == kept
        await pilot.press("enter")
        await triage(pilot, app, "4", "security")
        await pilot.press("escape")  # search cleared: every case again, the same one highlighted
        await settle(pilot)
        assert on_screen(app) == kept

        await pilot.press("G", "r")  # reload at the last row
        await settle(pilot)
        assert on_screen(app) == screen.case_ids()[-1]
        await triage(pilot, app, "1", "dataset")


async def check_list(pilot: Any, app: RecordingApp, view: str, moves: tuple[str, ...]) -> None:
    """Open ``view``, go down the list, then each of ``moves`` (sort, search, reload keys) and a category key."""
    await pilot.press(view)
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, TableScreen) and screen.shown is not None and screen.shown.num_rows > 10
    await pilot.press(*["j"] * (screen.shown.num_rows - 2))
    await settle(pilot)
    case = on_screen(app)
    for i, key in enumerate(moves):
        await pilot.press(*key.split("+"))  # "m+down+enter": pick the next measure
        await settle(pilot)
        assert on_screen(app) == case, (view, key)
        await triage(pilot, app, "1234"[i % 4], ("dataset", "ingestion", "ranking", "security")[i % 4])
    await pilot.press("slash", "q", "1")  # a search the case may not match: it, or the first match
    await settle(pilot)
    listed = screen.case_ids()
    assert on_screen(app) == (case if case in listed else listed[0])
    await pilot.press("enter")
    await triage(pilot, app, "2", "ingestion")


@pilot_test
async def test_zero_hit_and_compare_keep_the_case_on_screen(sample_db: Path, tmp_path: Path) -> None:
    app = make_app(sample_db, tmp_path, run="bm25")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await check_list(pilot, app, "z", ("t", "T", "r"))
        await check_list(pilot, app, "c", ("t", "T", "m+down+enter", "r"))


@pilot_test
async def test_leakage_keeps_the_case_on_screen(sample_db: Path, tmp_path: Path) -> None:
    app = make_app(sample_db, tmp_path, run="no-acl-filter")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await check_list(pilot, app, "l", ("t", "t", "T", "r"))


@pilot_test
async def test_slices_keep_the_slice_on_screen_and_enter_opens_it(sample_db: Path, tmp_path: Path) -> None:
    app = make_app(sample_db, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SlicesScreen)
        while screen.dimension != "source_family":  # a dimension with more slices than rows on screen
            await pilot.press("d")
            await settle(pilot)
        assert screen.shown is not None and screen.shown.num_rows > 20
        await pilot.press("G")
        await settle(pilot)
        value = on_screen(app)
        for key in ("t", "t", "T", "r"):
            await pilot.press(key)
            await settle(pilot)
            assert on_screen(app) == value, key
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FailuresScreen) and app.screen.slice_filter is not None
        assert app.screen.slice_filter[:2] == ("source_family", value)


@pilot_test
async def test_a_note_from_another_process_while_a_view_opens(sample_db: Path, tmp_path: Path) -> None:
    """The notes poll fires between a view being pushed and its widgets existing: that view's own mount shows
    the note, and the poll neither reaches into its missing widgets nor stops the app."""
    app = make_app(sample_db, tmp_path)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        NotesStore(app.store.path).set("hybrid-rerank", "q013", category="dataset", author="other")
        screen = FailuresScreen()
        waiting = app.push_screen(screen)  # on the stack, not yet composed
        assert app.screen is screen and not screen.is_mounted
        app._poll_notes()
        await waiting
        await settle(pilot)
        assert screen.shown is not None and "q013" in screen.case_ids()
        assert app.notes_version >= 1
        row = screen.shown.to_pylist()[screen.case_ids().index("q013")]
        assert "dataset" in row.values(), row
