"""Keys typed while a view loads are not lost, the overview paints its metric table before the heavy sections,
moving between cases uses the prefetched neighbour, and the footer never overflows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragtriage.app.browse.reads as data
from ragtriage.classify import refresh
from ragtriage.store import connect
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.failures import FailuresScreen
from ragtriage.tui.screens.table_view import replay
from ragtriage.tui.widgets.footer import FittingFooter, FooterKey, key_width, rows_of
from tests.tui.helpers import HANG_GUARD, pilot_test, plain, settle, static_text, until


@pytest.fixture
def slow_failures(monkeypatch: pytest.MonkeyPatch, db_path: Path) -> Iterator[threading.Event]:
    """The real failure list and failure counts (classify.failure_list, classify.failure_summary) of a stored
    classification, held back until the test sets the event, like a large run (the fixture sets it at teardown, so
    no worker is left waiting). A store not classified yet lists what the app's background classification stored
    so far instead (tests/tui/test_background_classify.py)."""
    con = connect(db_path)
    try:
        refresh(con)
    finally:
        con.close()
    release = threading.Event()

    def held(fast: Any) -> Any:
        def slow(*args: Any) -> Any:
            release.wait()
            return fast(*args)

        return slow

    for kind in ("failure_list", "failure_summary"):
        monkeypatch.setitem(data.FETCHERS, kind, held(data.FETCHERS[kind]))
    yield release
    release.set()


def make_app(db_path: Path) -> TriageApp:
    return TriageApp(db_path, "bm25", "hybrid", author="tester")


@pytest.mark.slow
@pilot_test
async def test_keys_typed_while_the_failures_list_loads_act_once_it_is_there(
    db_path: Path, slow_failures: threading.Event
) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f")  # while the overview is still loading
        screen = app.screen
        assert isinstance(screen, FailuresScreen)
        assert screen.table_widget() is None  # still loading: nothing to move on yet
        await pilot.press("j", "j", "enter")
        assert screen.table_widget() is None and screen.pending == ["down", "down", "open"]
        slow_failures.set()
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        assert app.screen.case_id == "q4"  # third failing case of bm25, in natural order: q2, q3, q4, q10
        assert app.screen.pos == 2
        assert list(app.screen.case_list) == ["q2", "q3", "q4", "q10"]


@pytest.mark.slow
@pilot_test
async def test_overview_shows_the_metric_table_while_heavier_sections_load(
    db_path: Path, slow_failures: threading.Event
) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: "loading" not in static_text(app, "#sec-summary"))
        summary = static_text(app, "#sec-summary")
        # nDCG@3 of bm25, linear gain: q1 3/log2(3)/3 = 0.6309, q2 0, q3 (grade 2 at rank 2) 0.6309,
        # q10 (grade 3 at rank 1; ideal adds a grade-2 unit at rank 2) 3/(3 + 2/log2(3)) = 0.7039 → mean 0.4914
        assert "nDCG@3      0.4914" in summary
        assert static_text(app, "#sec-categories").strip() == "loading classify.failure_summary…"
        slow_failures.set()
        await settle(pilot)
        assert "ranking" in static_text(app, "#sec-categories")


@pytest.mark.slow
@pilot_test
async def test_next_case_comes_from_the_prefetch_and_notes_invalidate_it(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_case("q1", ["q1", "q2", "q3"])
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CaseScreen)
        assert screen.detail_key("q2") in screen.prefetched
        await pilot.press("n")  # shown at once from the prefetch: no settle needed
        assert screen.detail is not None and screen.detail.case["case_id"] == "q2"
        assert "vpn setup" in static_text(app, "#sec-why")
        await pilot.press("3")  # a note on q2 bumps the notes version: q1's prefetched detail is stale now
        await settle(pilot)
        assert "ranking / - by tester" in static_text(app, "#sec-triage")
        await pilot.press("p")
        await settle(pilot)
        assert screen.case_id == "q1" and "not triaged" in static_text(app, "#sec-triage")
        await pilot.press("n")
        await settle(pilot)
        assert "ranking / - by tester" in static_text(app, "#sec-triage")


def test_replay_moves_and_clamps() -> None:
    assert replay(["down", "down", "up"], 0, 10, 5) == 1
    assert replay(["bottom", "up"], 0, 10, 5) == 8
    assert replay(["pagedown", "pagedown", "pagedown"], 0, 10, 4) == 9
    assert replay(["top", "up", "pageup"], 7, 10, 4) == 0
    assert replay(["down"], 0, 0, 4) == 0


def footer_fits(app: TriageApp) -> list[str]:
    """The keys the footer shows, after checking that none is under the palette key or past the edge."""
    footer = app.screen.query_one(FittingFooter)
    keys = [k for k in footer.query(FooterKey) if not k.has_class("-command-palette")]
    palette = footer.query_one(".-command-palette", FooterKey)
    for k in keys:
        assert k.region.right <= palette.region.x, f"{k.key_display} runs under the palette key"
    assert palette.region.right <= app.size.width
    return [k.key_display for k in keys]


#: The keys each view's footer shows, at 80 columns as at 200 (the help key last): every key that acts there.
EVERY_KEY = {
    "o": ["esc", "m", "E", "q", "?"],
    "s": ["⏎", "esc", "/", "t", "d", "E", "q", "?"],
    "z": ["⏎", "esc", "/", "t", "1-4", "5-8", "e", "E", "q", "?"],
    "l": ["⏎", "esc", "/", "t", "1-4", "5-8", "e", "n", "p", "E", "q", "?"],
    "f": ["⏎", "esc", "/", "t", "1-4", "5-8", "e", "a", "p", "u", "E", "q", "?"],
    "c": ["⏎", "esc", "/", "t", "1-4", "5-8", "e", "m", "b", "w", "v", "d", "E", "q", "?"],
    "case": ["esc", "1-4", "5-8", "e", "n", "p", "E", "q", "?"],
}


@pytest.mark.slow
@pilot_test
async def test_footer_shows_every_key_and_never_overflows_at_80_columns(db_path: Path) -> None:
    """At 80 columns the keys take a second row instead of being dropped (the Failures view hid e, a, p, u)."""
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in ("o", "s", "z", "l", "f", "c"):
            await pilot.press(key)
            await settle(pilot)
            assert footer_fits(app) == EVERY_KEY[key], key
        assert app.screen.query_one(FittingFooter).size.height == 2
        await pilot.press("f", "enter")
        await settle(pilot)
        assert footer_fits(app) == EVERY_KEY["case"]


def test_footer_rows_fill_in_order_with_help_last() -> None:
    keys = [FooterKey(k, k, "x" * 5, "a") for k in "abcdef"] + [FooterKey("question_mark", "?", "Help", "h")]
    # each key 1 + 1 + 5 + 1 = 8 cells, help 7: two keys a row in 17 cells, help at the end of the last row
    rows = rows_of(keys, 17, compact=True)
    assert [[k.key_display for k in row] for row in rows] == [["a", "b"], ["c", "?"]]
    assert [[k.key_display for k in row] for row in rows_of(keys, 80, compact=True)] == [[*"abcdef", "?"]]
    assert [len(r) for r in rows_of(keys, 40, compact=True)] == [5, 2]


@pytest.mark.slow
@pilot_test
async def test_n_and_p_follow_the_order_of_the_list_the_case_came_from(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")  # Compare: one row per paired case, worst Δ first
        await settle(pilot)
        order = app.screen.case_ids()  # type: ignore[attr-defined]
        # bm25 − hybrid at k=2: q1 loses (hybrid has d1#1 grade 3 first), q2 q3 q10 tie, in natural id order
        assert order == ["q1", "q2", "q3", "q10"]
        await pilot.press("enter")
        await settle(pilot)
        seen = [app.screen.case_id]  # type: ignore[attr-defined]
        for _ in range(3):
            await pilot.press("n")
            await settle(pilot)
            seen.append(app.screen.case_id)  # type: ignore[attr-defined]
        assert seen == order
        await pilot.press("p")
        await settle(pilot)
        assert app.screen.case_id == "q3"  # type: ignore[attr-defined]
        await pilot.press("escape", "l")  # Leakage: one row per leaking case
        await settle(pilot)
        assert app.screen.case_ids() == ["q3"]  # type: ignore[attr-defined]


@pytest.mark.slow
@pilot_test
async def test_footer_shows_every_key_at_200_columns(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        assert footer_fits(app) == EVERY_KEY["f"]
        assert app.screen.query_one(FittingFooter).size.height == 1


def test_key_width_counts_key_space_description_and_margin() -> None:
    assert key_width(FooterKey("f", "f", "Failures", "x"), compact=True) == 1 + 1 + 8 + 1
    assert key_width(FooterKey("question_mark", "?", "", "x"), compact=True) == 2


def burst(app: TriageApp, *keys: str) -> None:
    """Keys arriving in one read, as a fast typist or a terminal's key repeat delivers them."""
    from textual import events

    assert app._driver is not None
    for key in keys:
        event = events.Key(key, key)
        event.set_sender(app)
        app._driver.send_message(event)


@pytest.mark.slow
@pilot_test
async def test_a_burst_of_scroll_keys_scrolls_by_each_key(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 12)) as pilot:
        await settle(pilot)
        body = app.screen.query_one("#body")
        assert body.max_scroll_y >= 5
        burst(app, "j", "j", "j", "j", "j")
        await settle(pilot)
        assert body.scroll_y == 5
        burst(app, "k", "k")
        await settle(pilot)
        assert body.scroll_y == 3


@pytest.mark.slow
@pilot_test
async def test_the_overview_draws_its_pictures_only_while_it_is_on_screen(
    db_path: Path, slow_failures: threading.Event
) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        overview = app.screen
        await pilot.press("f")  # while the overview waits for the failure counts
        slow_failures.set()
        await settle(pilot)
        assert isinstance(app.screen, FailuresScreen)
        assert "ranking" in plain(overview.query_one("#sec-categories").content)  # stored answers: fetched
        assert "loading metrics.per_case" in plain(overview.query_one("#sec-dist").content)  # left for later
        assert not overview.query("#plot-dist")
        await pilot.press("o")
        await settle(pilot)
        assert app.screen is overview and overview.query_one("#plot-dist").display
        assert "per case" in static_text(app, "#sec-dist")


async def failures_list(app: TriageApp, pilot: Any) -> FailuresScreen:
    """The Failures list, opened with `f` and filled."""
    await pilot.press("f")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, FailuresScreen)
    return screen


async def rest(screen: FailuresScreen, pilot: Any) -> None:
    """The cursor rests on its row: the rest timer the last highlight started fires now."""
    timer = screen._prefetch_timer
    assert timer is not None, "no highlight is waiting for the cursor to rest"
    timer.stop()
    screen._prefetch_highlighted()
    await pilot.pause()


@pytest.mark.slow
@pilot_test
async def test_the_row_the_cursor_rests_on_is_read_ahead_and_enter_uses_that_read(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list reads the highlighted row's case ahead (TableScreen.PREFETCH_AFTER after the cursor stops), so Enter
    opens it from that read: one read per case, none for a row the cursor only passed over."""
    import ragtriage.app.browse.case as detail_data

    reads: list[str] = []
    real = detail_data.case_detail_soon

    def counted(reader: Any, run_id: str, case_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(case_id)
        return real(reader, run_id, case_id, *args, **kwargs)

    monkeypatch.setattr(detail_data, "case_detail_soon", counted)
    # The rest never elapses by itself here, however slow the machine: rest() is the timer firing.
    monkeypatch.setattr(FailuresScreen, "PREFETCH_AFTER", HANG_GUARD)
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await failures_list(app, pilot)
        ids = screen.case_ids()
        assert len(ids) >= 3
        assert reads == [ids[0]]  # the first row, read as the list appears: no rest needed
        await rest(screen, pilot)
        assert reads == [ids[0]]  # its highlight's own read ahead finds the read started
        await pilot.press("down", "down")  # passes over the second row without resting on it
        assert reads == [ids[0]]
        await rest(screen, pilot)
        assert reads == [ids[0], ids[2]]
        assert app.early_case is not None and app.early_case[0][-1] == ids[2]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen) and app.screen.case_id == ids[2]
        assert app.screen.detail is not None and app.screen.detail.case["case_id"] == ids[2]
        assert reads == [ids[0], ids[2]]  # Enter took the read the rest started
        assert app.early_case is None


@pytest.mark.slow
@pilot_test
async def test_a_case_read_ahead_is_laid_out_ahead_and_shown_without_a_second_layout(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read ahead also lays the sections out (at the width the case screen's body will have), so the screen
    shows that layout as it is, at mount; the case's text is the same as a case read on opening."""
    import ragtriage.tui.case_layout as case_layout
    import ragtriage.tui.screens.case_detail as case_screen

    laid_out: list[tuple[str, int]] = []
    real = case_screen.rendered

    def counted(d: Any, width: int, side: Any = None) -> Any:
        laid_out.append((str(d.case["case_id"]), width))
        return real(d, width, side)

    monkeypatch.setattr(case_screen, "rendered", counted)
    monkeypatch.setattr(case_layout, "rendered", counted)  # the app's read ahead lays out with it
    fetched: list[str] = []
    real_fetch = CaseScreen.fetch

    def fetch(self: CaseScreen, cur: Any) -> Any:
        fetched.append(self.case_id)
        return real_fetch(self, cur)

    monkeypatch.setattr(CaseScreen, "fetch", fetch)
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        first = (await failures_list(app, pilot)).case_ids()[0]
        await until(lambda: app.early_case is not None and app.early_case[1].done())
        assert laid_out == [(first, 76)]  # 80 columns less the body's padding and scrollbar
        await pilot.press("enter")
        await settle(pilot)
        case = app.screen
        assert isinstance(case, CaseScreen) and case.case_id == first
        assert case.section_width() == 76
        # not laid out again, nor at another width once the body's scrollbar shows (its gutter is kept)
        assert [w for c, w in laid_out if c == first] == [76]
        assert fetched == []  # shown at mount from the finished read: no worker, no connection
        assert "Q " in static_text(app, "#sec-why")
        ahead = static_text(app, "#sec-results")
        await pilot.press("n", "p")  # back to the first case, now from the screen's own neighbour reads
        await settle(pilot)
        assert case.case_id == first and static_text(app, "#sec-results") == ahead


@pytest.mark.slow
@pilot_test
async def test_a_read_ahead_laid_out_at_another_width_is_laid_out_again_not_read_again(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal widened between the read ahead and Enter: the case screen lays the case out at its new width
    from the read it has, and reads nothing more."""
    import ragtriage.tui.case_layout as case_layout
    import ragtriage.tui.screens.case_detail as case_screen

    laid_out: list[tuple[str, int]] = []
    real = case_screen.rendered

    def counted(d: Any, width: int, side: Any = None) -> Any:
        laid_out.append((str(d.case["case_id"]), width))
        return real(d, width, side)

    read_again: list[str] = []
    real_read = case_screen.case_detail

    def read(cur: Any, run_id: str, case_id: str, *args: Any) -> Any:
        read_again.append(case_id)
        return real_read(cur, run_id, case_id, *args)

    monkeypatch.setattr(case_screen, "rendered", counted)
    monkeypatch.setattr(case_layout, "rendered", counted)  # the app's read ahead lays out with it
    monkeypatch.setattr(case_screen, "case_detail", read)
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        first = (await failures_list(app, pilot)).case_ids()[0]
        await until(lambda: app.early_case is not None and app.early_case[1].done())
        await pilot.resize_terminal(100, 24)
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        case = app.screen
        assert isinstance(case, CaseScreen) and case.case_id == first
        assert [w for c, w in laid_out if c == first] == [76, 96]
        assert read_again == []
        assert "Q " in static_text(app, "#sec-why")


@pytest.mark.slow
@pilot_test
async def test_footer_is_rebuilt_only_when_its_keys_change(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's Footer rebuilds every key on each bindings refresh (focus moves, screen pushes); FittingFooter
    composes its keys at mount and again only for different keys, once for changes that come together."""
    composed: list[str] = []
    real = FittingFooter.compose

    def counted(self: FittingFooter) -> Any:
        composed.append(type(self.screen).__name__)
        return real(self)

    monkeypatch.setattr(FittingFooter, "compose", counted)
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        composed.clear()
        await pilot.press("f")
        await settle(pilot)
        # mount, then once when the list takes focus (Enter becomes the table's select_cursor)
        assert composed == ["FailuresScreen", "FailuresScreen"]
        composed.clear()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        assert composed == ["CaseScreen"]  # at mount only: the bindings refreshes after it find the same keys
        assert footer_fits(app) == EVERY_KEY["case"]
        composed.clear()
        await pilot.press("n", "n")
        await settle(pilot)
        assert composed == []
        await pilot.press("escape")
        await settle(pilot)
        assert footer_fits(app) == EVERY_KEY["f"]
        composed.clear()
        await pilot.press("slash")  # the search box takes focus: the keys it types leave the footer
        await settle(pilot)
        assert composed == ["FailuresScreen"]
        assert footer_fits(app) == ["esc", "/"]
