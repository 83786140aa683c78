"""Every view at 80×24 on the hostile store (conftest.hostile_db): data strings show as visible escapes and
literal brackets, never as terminal codes or markup, wherever they land (status line, column labels, lists,
case screen, notifications, the note editor); key columns fit; `n` in Leakage goes to the next leaking case."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.fuzzy import Matcher
from textual.widgets import Input, TextArea

from ragtriage.notes import NotesStore, notes_path_for
from ragtriage.output_paths import name_part
from ragtriage.safe_text import visible
from ragtriage.tui.app import TriageApp
from ragtriage.tui.commands import literal_highlight
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.lists import LeakageScreen
from ragtriage.tui.widgets.arrow_table import ArrowTable
from tests.tui.conftest import EVIL_CASE, EVIL_RUN, HOSTILE_NOTE, MARKUP_CASE
from tests.tui.helpers import pilot_test, settle
from tests.tui.test_views import screen_lines

CONTROLS = ("\x1b", "\x07", "\u202e")


def shown(app: TriageApp) -> str:
    lines = screen_lines(app)
    assert all(cell_len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    assert not [c for c in CONTROLS if c in text], text
    return text


@pytest.mark.slow
@pilot_test
async def test_every_view_shows_hostile_strings_literally(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", EVIL_RUN, author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in "oszlfc":
            await pilot.press(key)
            await settle(pilot)
            text = shown(app)
            assert "o Overview" in text.splitlines()[0]  # a clear-screen escape would have wiped the view bar
        # Compare: the baseline's id is in the status line and is a column label, as typed
        assert f"bm25 vs {visible(EVIL_RUN)}" in text
        labels = [c.label.plain for c in app.screen.query_one(ArrowTable).ordered_columns]
        assert f"{visible(EVIL_RUN)} LEAKS" in labels  # its q3 and q8 leak
        await pilot.press("f")
        await settle(pilot)
        text = shown(app)
        assert "[bold]q8[/]" in text and "q7␛[2J\\u202eevil" in text


@pytest.mark.slow
@pilot_test
async def test_slices_keep_their_key_columns_at_80_columns(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        text = shown(app)
        header = next(line for line in text.splitlines() if "slice_value" in line)
        assert header.split()[:6] == ["slice_value", "n", "mean", "median", "p10", "zero_hit_rate"]
        assert "␛[2J[bold red]x[/]" in text and "[link=http://evil.example]l[/link" in text


@pytest.mark.slow
@pilot_test
async def test_n_in_leakage_moves_to_the_next_leaking_case_and_its_reasons(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LeakageScreen)
        assert screen.case_ids() == [MARKUP_CASE, "q3"]
        assert "leaked results of [bold]q8[/]" in shown(app)
        await pilot.press("n")
        await settle(pilot)
        assert screen.cursor_case() == "q3"
        assert "acl-no-overlap: unit acl [hr], principal groups [eng]" in shown(app)
        await pilot.press("p", "enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen) and app.screen.case_id == MARKUP_CASE
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.case_id == "q3"
        text = shown(app)
        assert "LEAK" in text and "acl-no-overlap: unit acl [hr], principal groups [eng]" in text


@pytest.mark.slow
@pilot_test
async def test_the_case_screen_of_a_hostile_case(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_case(EVIL_CASE, [EVIL_CASE, "q2"])
        await settle(pilot)
        text = shown(app)
        assert "case q7␛[2J\\u202eevil (1/2)" in text
        assert "Q wwwww" in text  # a 400-character word is folded, not pushed off the screen
        await pilot.press("n")  # q2: its run event's error holds an escape, markup and a link
        await settle(pilot)
        text = shown(app)
        assert "status error · TIMEOUT · error ␛[2Jboom [bold" in text and "red]x[/]␛]8;;http://x␇click" in text


@pytest.mark.slow
@pilot_test
async def test_notifications_are_plain_text(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.notify(f"saved {MARKUP_CASE} {EVIL_CASE}", title=EVIL_RUN)
        await pilot.pause()
        (note,) = list(app._notifications)
        assert note.message == "saved [bold]q8[/] q7␛[2J\\u202eevil" and note.title == visible(EVIL_RUN)
        assert note.markup is False


@pytest.mark.slow
@pilot_test
async def test_the_note_editor_shows_controls_visibly_and_leaves_an_unchanged_note_alone(hostile_db: Path) -> None:
    store = NotesStore(notes_path_for(hostile_db))
    before = store.get("bm25", "q3")
    assert before is not None and before.note == HOSTILE_NOTE
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_case("q3", ["q3"])
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        area = app.screen.query_one(TextArea)
        assert area.text == visible(HOSTILE_NOTE, keep_newlines=True)
        assert "\x1b" not in area.text and "␛[2J␛]8;;http://x␇click" in area.text
        shown(app)
        await pilot.press("ctrl+s")  # saved unchanged: nothing is written
        await settle(pilot)
    after = store.get("bm25", "q3")
    assert after is not None and after.note == HOSTILE_NOTE and after.updated_at == before.updated_at


@pytest.mark.slow
@pilot_test
async def test_the_palette_shows_case_and_run_ids_as_typed(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", "q")
        await settle(pilot)
        await pilot.pause(0.3)
        text = shown(app)
        assert "[bold]q8[/]" in text and "q7␛[2J\\u202eevil" in text
        await pilot.press("backspace", "e", "v", "i", "l")
        await pilot.pause(0.3)
        assert f"Use run: {visible(EVIL_RUN)}" in shown(app)


def test_literal_highlight_keeps_brackets() -> None:
    matcher = Matcher("q8")
    assert matcher.highlight("[bold]q8[/]").plain == "q8"  # Textual's own reads the candidate as markup
    assert literal_highlight(matcher, "[bold]q8[/]").plain == "[bold]q8[/]"


@pytest.mark.slow
@pilot_test
async def test_the_export_prompt_names_a_file_without_the_run_ids_controls(hostile_db: Path, tmp_path: Path) -> None:
    app = TriageApp(hostile_db, EVIL_RUN, author="tester", export_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("E")
        await settle(pilot)
        assert app.screen.query_one(Input).value == str(tmp_path / "ragtriage-notes-evil_2J_b_run_b.csv")
        shown(app)


def test_name_part() -> None:
    assert name_part("evil\x1b[2J[b]run[/b]") == "evil_2J_b_run_b"
    assert name_part("../../etc/passwd") == "etc_passwd" and name_part("run-a.v2") == "run-a.v2"
    assert name_part("\x1b") == "run"
