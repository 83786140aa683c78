"""Pilot tests of each view at 80×24 on the small store of conftest.py."""

from __future__ import annotations

from pathlib import Path

from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.lists import CompareScreen, LeakageScreen, SlicesScreen
from ragtriage.tui.screens.modals import HelpScreen
from ragtriage.tui.widgets.arrow_table import ArrowTable
from tests.tui.helpers import pilot_test, settle, static_text


def make_app(db_path: Path, **kw: object) -> TriageApp:
    return TriageApp(db_path, "bm25", "hybrid", author="tester", **kw)  # type: ignore[arg-type]


@pilot_test
async def test_overview_shows_identity_and_red_leak_count(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        identity = static_text(app, "#sec-identity")
        assert "bm25 k=2 candidate_k=5" in identity
        assert "unit=chunk relevant: grade>=2 on 0..3" in identity
        leaks = app.screen.query_one("#sec-leaks").content
        assert leaks.plain == "LEAKAGE: 1 result rows the principal may not see (press l)"
        assert "red" in str(leaks.style)


@pilot_test
async def test_leakage_lists_every_leaked_row_in_error_style(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LeakageScreen)
        assert screen.shown is not None
        rows = screen.shown.to_pylist()
        assert [(r["case_id"], r["query"], r["stage"], r["rank"], r["unit_id"], r["rule"]) for r in rows] == [
            ("q3", "salary bands", "final", 1, "d2#1", "acl-no-overlap")
        ]
        table = screen.query_one(ArrowTable)
        assert table.has_class("hard-failure")
        assert "LEAKAGE: 1 result rows" in static_text(app, "#status")


@pilot_test
async def test_search_narrows_and_escape_restores(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        await pilot.press("slash", "n", "o", "p", "e")
        await settle(pilot)
        assert app.screen.shown.num_rows == 0  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.shown.num_rows == 1  # type: ignore[attr-defined]
        await pilot.press("slash", "S", "A", "L")  # query text, case-insensitive
        await settle(pilot)
        assert app.screen.shown.column("case_id").to_pylist() == ["q3"]  # type: ignore[attr-defined]


@pilot_test
async def test_sort_cycles_columns_and_reverses(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        await pilot.press("t")
        assert app.screen.sort_column == "case_id"  # type: ignore[attr-defined]
        await pilot.press("t", "T")
        assert (app.screen.sort_column, app.screen.descending) == ("query", True)  # type: ignore[attr-defined]
        assert "sorted by query desc" in static_text(app, "#status")


@pilot_test
async def test_case_detail_shows_results_grades_acl_and_literal_markup(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_case("q1", ["q1", "q3"])
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        case = static_text(app, "#sec-case")
        assert "reset password [red]now[/red]" in case
        assert "u1 groups [eng] tenant acme" in case
        results = static_text(app, "#sec-results").splitlines()
        rows = [line.split() for line in results if line.startswith(("fin", "cand"))]
        # bm25 ranks the unlabelled heading chunk first: grade '?' marks it unjudged; d1#1 carries grade 3
        assert [r[:4] for r in rows] == [["fin", "1", "?", "d1#2"], ["fin", "2", "3", "d1#1"]]
        assert all("ok" in r for r in rows)
        passages = static_text(app, "#sec-passages")
        assert "Reset via [b]SSO[/b] portal" in passages
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.case_id == "q3"  # type: ignore[attr-defined]
        results = static_text(app, "#sec-results")
        assert "LEAK acl-no-overlap" in results
        await pilot.press("n")  # end of the list: stays
        await settle(pilot)
        assert app.screen.case_id == "q3"  # type: ignore[attr-defined]
        await pilot.press("p")
        await settle(pilot)
        assert app.screen.case_id == "q1"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, CaseScreen)


@pilot_test
async def test_help_lists_the_keys_of_the_view(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        keys = dict((d, k) for k, d in app.screen.keys)
        assert keys["Search"] == "/" and keys["Sort"] == "t" and keys["Back"] == "esc"
        await pilot.press("escape")
        assert isinstance(app.screen, LeakageScreen)


@pilot_test
async def test_command_palette_opens_a_case_by_id(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press("q", "3")
        await settle(pilot)
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        assert app.screen.case_id == "q3"


@pilot_test
async def test_missing_core_function_is_a_message_not_a_crash(db_path: Path, monkeypatch: object) -> None:
    import ragtriage.tui.data as data

    def broken(*_: object, **__: object) -> None:
        raise data.ViewError("ragtriage.metrics.summarize is not available in this build")

    monkeypatch.setattr(data, "table", broken)  # type: ignore[attr-defined]
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "4 section(s) unavailable" in static_text(app, "#status")
        assert "is not available in this build" in static_text(app, "#sec-summary")
        assert "bm25 k=2" in static_text(app, "#sec-identity")  # the store's own rows still show
        await pilot.press("z")
        await settle(pilot)
        assert "is not available in this build" in static_text(app, "#status")


@pilot_test
async def test_slices_and_compare_put_the_figures_first_at_80_columns(db_path: Path) -> None:
    app = make_app(db_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SlicesScreen) and screen.shown is not None
        assert screen.shown.column_names[:4] == ["slice_value", "n", "mean", "median"]
        assert screen.shown.column_names[-4:] == ["dimension", "measure", "threshold", "gain"]
        assert "by query_type · nDCG@10 grade>=2 exponential" in static_text(app, "#status")
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.shown is not None
        assert screen.shown.column_names[:5] == ["case_id", "metric", "diff", "candidate", "baseline"]


def test_table_cells_round_floats_to_four_decimals_and_keep_them_numeric() -> None:
    import pyarrow as pa

    from ragtriage.tui.widgets.arrow_table import displayable

    shown = displayable(pa.table({"mean": [0.6291388, 1 / 3], "n": [11, 3]}))
    assert shown.column("mean").to_pylist() == [0.6291, 0.3333]
    assert pa.types.is_floating(shown.schema.field("mean").type)
    assert shown.column("n").to_pylist() == [11, 3]
