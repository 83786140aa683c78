"""Pilot tests of each view at 80×24 on the small store of conftest.py, read through the real core."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from rich.cells import cell_len

from ragtriage.notes import NotesStore, notes_path_for
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.failures import FailuresScreen
from ragtriage.tui.screens.lists import CompareScreen, LeakageScreen, SlicesScreen, ZeroHitScreen
from ragtriage.tui.screens.modals import HelpScreen
from ragtriage.tui.screens.overview import OverviewScreen
from ragtriage.tui.text import middle, natural_order, num, wrap_lines
from ragtriage.tui.widgets.arrow_table import ArrowTable, displayable
from tests.tui.conftest import LONG_UNIT
from tests.tui.helpers import pilot_test, settle, static_text, until


def make_app(db_path: Path, **kw: object) -> TriageApp:
    return TriageApp(db_path, "bm25", "hybrid", author="tester", **kw)  # type: ignore[arg-type]


@pytest.mark.slow
@pilot_test
async def test_overview_shows_identity_and_the_leak_banner_first(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        identity = static_text(app, "#sec-identity")
        assert "bm25 k=2 (run.json) candidates to 5" in identity
        assert "unit=chunk relevant: grade>=2 on 0..3" in identity
        leaks = app.screen.query_one("#sec-leaks").content
        assert leaks.plain.strip() == "LEAKAGE FAILS: 1 cases, 1 leaked final results (press l)"
        assert "red" in str(leaks.style)
        assert app.screen.query_one("#sec-leaks").region.bottom <= 24  # above the fold
        dist = app.screen.query_one("#plot-dist")
        assert dist.display
        # nDCG@2 of bm25 per case: q1 0.6309, q2 0, q3 0.6309, q10 0.7872 → bins 0.0 (1), 0.6 (2), 0.7 (1)
        await pilot.press("m", "down", "enter")  # P@2: q1 0.5, q2 0, q3 0.5, q10 0.5
        await settle(pilot)
        assert "P@2 per case" in static_text(app, "#sec-dist")


@pytest.mark.slow
@pilot_test
async def test_leakage_lists_one_row_per_case_and_every_reason_in_full(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LeakageScreen) and screen.shown is not None
        rows = screen.shown.to_pylist()
        assert [(r["case_id"], r["final"], r["candidate"], r["rules"], r["query"]) for r in rows] == [
            ("q3", 1, 0, "acl-no-overlap", "salary bands")
        ]
        assert screen.query_one(ArrowTable).has_class("hard-failure")
        reasons = static_text(app, "#reason-text")
        assert "final #1 d2#1" in reasons
        assert "acl-no-overlap: unit acl [hr], principal groups [eng]" in reasons
        assert "LEAKAGE in 1 cases" in static_text(app, "#status")


@pytest.mark.slow
@pilot_test
async def test_search_finds_case_ids_unit_ids_and_query_text(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        await until(lambda: getattr(app.screen, "shown", None) is not None)  # the view's read may start a frame late
        await pilot.press("slash", "n", "o", "p", "e")
        await settle(pilot)
        assert app.screen.shown.num_rows == 0  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("slash", "d", "2", "#")  # a leaked unit's id
        await settle(pilot)
        assert app.screen.case_ids() == ["q3"]  # type: ignore[attr-defined]
        await pilot.press("escape", "f")
        await settle(pilot)
        await until(lambda: type(app.screen).__name__ == "FailuresScreen" and app.screen.shown is not None)  # type: ignore[attr-defined]
        await pilot.press("slash", "d", "1", "#", "9")  # the unit q10's evidence names
        await settle(pilot)
        assert app.screen.case_ids() == ["q10"]  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.press("slash", "V", "P", "N")  # query text, case-insensitive
        await settle(pilot)
        assert app.screen.case_ids() == ["q2"]  # type: ignore[attr-defined]


@pytest.mark.slow
@pilot_test
async def test_sort_is_natural_and_reverses(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FailuresScreen)
        await pilot.press("t")
        assert screen.sort_column == "case_id"
        assert screen.case_ids() == ["q2", "q3", "q4", "q10"]
        await pilot.press("T")
        assert screen.case_ids() == ["q10", "q4", "q3", "q2"]
        assert "sorted by case_id desc" in static_text(app, "#status")


def screen_lines(app: TriageApp) -> list[str]:
    """What the terminal shows, line by line (the rendered screen, as tmux would capture it)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


@pytest.mark.slow
@pilot_test
async def test_case_screen_says_why_in_its_header(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_case("q1", ["q1", "q3"])
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        why = static_text(app, "#sec-why")
        assert "Q reset password [red]now[/red]" in why  # markup in data prints as typed
        assert "not a failure of this run" in why
        # bm25 vs hybrid at k=2 for q1: P 0.5 both, R 1 both, RR 0.5 vs 1, nDCG 0.6309 vs 1
        assert "bm25    0.5000  1.0000   0.5000   0.6309" in why
        assert "hybrid  0.5000  1.0000   1.0000   1.0000" in why
        assert "Δ           ±0      ±0  -0.5000  -0.3691" in why
        results = static_text(app, "#sec-results").splitlines()
        rows = [line.split() for line in results[2:] if line.strip()]
        # bm25 ranks the unlabelled heading chunk first: unjudged; d1#1 carries grade 3 and is relevant
        assert rows == [["1", "d1#2", "unjudged"], ["2", "d1#1", "3", "relevant"]]
        passages = static_text(app, "#sec-passages")
        assert "Reset via [b]SSO[/b] portal" in passages
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.case_id == "q3"  # type: ignore[attr-defined]
        leaked = static_text(app, "#sec-results").splitlines()[2].split()
        assert leaked == ["1", "d2#1", "unjudged", "LEAK"]
        assert "acl-no-overlap: unit acl [hr], principal groups [eng]" in static_text(app, "#sec-leaks")
        assert "security security.leaked-result" in static_text(app, "#sec-why")
        await pilot.press("n")  # end of the list: stays
        await settle(pilot)
        assert app.screen.case_id == "q3"  # type: ignore[attr-defined]
        await pilot.press("p")
        await settle(pilot)
        assert app.screen.case_id == "q1"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, CaseScreen)


@pytest.mark.slow
@pilot_test
async def test_hostile_strings_show_as_visible_text_and_fit_80_columns(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_case("q10", ["q10"])
        await settle(pilot)
        lines = screen_lines(app)
        text = "\n".join(lines)
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
        assert "Q ␛[2J␛]8;;http://evil.example␇link␛]8;;␇ ␛]52;c;ZXZpbA==␇" in text
        assert "\\u202eevil" in text and "[bold]x[/]" in text
        assert all(cell_len(line) <= 80 for line in lines)
        results = static_text(app, "#sec-results")
        assert "d9#xxxxxxx" in results and "…" in results and LONG_UNIT not in results  # cut in the middle
        why = static_text(app, "#sec-why")
        assert "dataset dataset.label-not-in-snapshot" in why
        assert "d1#9 grade 2 is not in the corpus; k=2" in why
        assert "d1#9" in static_text(app, "#sec-missing") and "not in the corpus" in static_text(app, "#sec-missing")


@pytest.mark.slow
@pilot_test
async def test_zero_hit_names_its_k(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("z")
        await settle(pilot)
        assert isinstance(app.screen, ZeroHitScreen)
        assert app.screen.case_ids() == ["q2"]
        assert "no relevant unit in the final top k=2" in static_text(app, "#status")


@pytest.mark.slow
@pilot_test
async def test_help_lists_the_view_and_app_keys_and_scrolls(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        view = {d: k for k, d in app.screen.view_keys}
        whole = {d: k for k, d in app.screen.app_keys}
        assert view["Search"] == "/" and view["Back"] == "esc" and view["by pattern"] == "p"
        assert whole["Help"] == "?" and whole["Export"] == "E" and whole["Failures"] == "f"
        body = app.screen.query_one("#help-body")
        assert body.max_scroll_y > 0  # longer than the screen: it scrolls
        await pilot.press("j", "j", "j")
        await settle(pilot)
        assert body.scroll_y == 3
        await pilot.press("G")
        await settle(pilot)
        assert body.scroll_y == body.max_scroll_y
        await pilot.press("escape")
        assert isinstance(app.screen, FailuresScreen)


@pytest.mark.slow
@pilot_test
async def test_palette_opens_cases_and_switches_views_without_stacking(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for case in ("q3", "q2"):
            await pilot.press("ctrl+p")
            await pilot.press("q", case[1])
            await settle(pilot)
            await pilot.pause(0.3)
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, CaseScreen) and app.screen.case_id == case
        assert len(app.screen_stack) == 2  # the second case replaced the first
        app.show_view("leakage")
        await settle(pilot)
        assert isinstance(app.screen, LeakageScreen) and len(app.screen_stack) == 1
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, OverviewScreen)


@pytest.mark.slow
@pilot_test
async def test_a_core_error_is_a_message_not_a_crash(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ragtriage.app.browse.reads as data

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("the per-case table is gone")

    monkeypatch.setattr(data, "core_per_case", broken)
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "section(s) unavailable" in static_text(app, "#status")
        assert "metrics.per_case: RuntimeError: the per-case table is gone" in static_text(app, "#sec-dist")
        assert "bm25 k=2" in static_text(app, "#sec-identity")  # the other sections still show
        await pilot.press("z")
        await settle(pilot)
        assert "the per-case table is gone" in static_text(app, "#status")


@pytest.mark.slow
@pilot_test
async def test_notes_from_another_process_appear_without_a_key_press(db_path: Path) -> None:
    """The app polls the notes file (every NOTES_POLL_S): another triager's note shows in the open list. The test
    waits for the list to show it, however long the machine takes, not for a number of seconds."""
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        other = NotesStore(notes_path_for(db_path))  # another triager: its own connection to the notes file
        other.set("bm25", "q4", author="bob", status="confirmed", note="seen by bob")

        def shows_it() -> bool:
            shown = app.screen.shown  # type: ignore[attr-defined]
            return shown is not None and "confirmed" in shown.column("status").to_pylist()

        await until(shows_it)
        rows = {r["case_id"]: r for r in app.screen.shown.to_pylist()}  # type: ignore[attr-defined]
        assert (rows["q4"]["status"], rows["q4"]["note"]) == ("confirmed", "seen by bob")


@pytest.mark.slow
@pilot_test
async def test_slices_and_compare_lift_constants_to_the_title(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SlicesScreen) and screen.shown is not None
        assert screen.shown.column_names[:4] == ["slice_value", "n", "mean", "median"]
        assert not {"dimension", "measure", "threshold", "gain"} & set(screen.shown.column_names)
        assert "by query_type · nDCG@2 grade>=2 linear" in static_text(app, "#status")
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.shown is not None
        assert screen.shown.column_names == ["case_id", "hybrid LEAKS", "bm25 LEAKS", "Δ", "query"]
        assert "bm25 vs hybrid · nDCG@2" in static_text(app, "#status")
        assert "0/3/1" in next(x for x in static_text(app, "#stats").splitlines() if x.startswith("nDCG@2"))
        await pilot.press("m", "down", "enter")  # next measure: P
        await settle(pilot)
        assert "bm25 vs hybrid · P@2" in static_text(app, "#status")
        assert "0/4/0" in next(x for x in static_text(app, "#stats").splitlines() if x.startswith("P@2"))


def test_cells_are_legible_plain_text() -> None:
    shown = displayable(
        pa.table(
            {
                "case_id": ["q1", "x" * 10_000, "\x1b[2J"],
                "mean": [0.6291388, 1 / 3, None],
                "n": [11, 3, 1],
                "query": ["[bold]x[/]", "\u202eevil", "ok"],
            }
        ),
        80,
    )
    assert shown.column("mean").to_pylist() == ["0.6291", "0.3333", "     —"]  # 4 decimals, one width
    ids = shown.column("case_id").to_pylist()
    assert ids[0] == "q1" and len(ids[1]) == 24 and "…" in ids[1] and ids[2] == "␛[2J"
    assert shown.column("query").to_pylist() == ["[bold]x[/]", "\\u202eevil", "ok"]


def test_text_helpers() -> None:
    t = pa.table({"c": ["q10", "q2", "q1", "a", "q2b"]})
    assert natural_order(t, "c").column("c").to_pylist() == ["a", "q1", "q2", "q2b", "q10"]
    assert middle("pol-travel-2024#06", 12) == "pol-tr…24#06"
    assert num(0.33333) == "0.3333" and num(3) == "3" and num(None) == "—" and num(1.5e7) == "1.5e+07"
    assert wrap_lines("one two three four five six", 9, 2) == ["one two", "three…"]
