"""The whole triage flow: failures list → detail → assign category and status → note → next → export CSV."""

from __future__ import annotations

import csv
from pathlib import Path

from textual.widgets import Input, TextArea

from ragtriage.notes import NotesStore, notes_path_for
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.failures import FailuresScreen
from ragtriage.tui.screens.modals import NoteEditor, PathPrompt
from tests.tui.helpers import pilot_test, settle, static_text


@pilot_test
async def test_failures_list_filters_by_category_and_status(db_path: Path, fake_core: object) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="ann")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FailuresScreen)
        rows = screen.shown.to_pylist()  # type: ignore[union-attr]
        assert [(r["case_id"], r["auto"], r["rule"], r["pattern"]) for r in rows] == [
            ("q1", "ranking", "relevant-below-k", "heading-only"),
            ("q2", "ingestion", "absent-from-final", None),
            ("q3", "dataset; security", "acl-no-overlap; label-on-forbidden-unit", None),
        ]
        await pilot.press("a")  # first category value: dataset
        assert screen.case_ids() == ["q3"]
        await pilot.press("a")  # ingestion
        assert screen.case_ids() == ["q2"]
        await pilot.press("x")
        assert screen.cursor_case() == "q2"  # clearing filters keeps the cursor on its case
        await pilot.press("3", "7")  # ranking, fixed
        await settle(pilot)
        note = NotesStore(notes_path_for(db_path)).get("bm25", "q2")
        assert note is not None and (note.category, note.status, note.author) == ("ranking", "fixed", "ann")
        assert screen.cursor_case() == "q2"  # the list refreshed in place
        await pilot.press("u")  # status filter: fixed
        assert screen.case_ids() == ["q2"]
        await pilot.press("u")  # (untriaged)
        assert screen.case_ids() == ["q1", "q3"]


@pilot_test
async def test_assign_note_next_and_export_csv(db_path: Path, fake_core: object, tmp_path: Path) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="ann")
    out = tmp_path / "export.csv"
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen) and app.screen.case_id == "q1"
        assert "ranking  rule relevant-below-k  pattern heading-only" in static_text(app, "#sec-classification")
        await pilot.press("3", "6")
        await settle(pilot)
        assert "ranking / confirmed by ann" in static_text(app, "#sec-triage")
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, NoteEditor)
        area = app.screen.query_one(TextArea)
        area.load_text("=HYPERLINK(x) [b]heading[/b] ranks; ")
        area.move_cursor(area.document.end)
        await pilot.press("o", "k")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        assert "=HYPERLINK(x) [b]heading[/b] ranks; ok" in static_text(app, "#sec-triage")
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.case_id == "q2"  # type: ignore[attr-defined]
        await pilot.press("2", "0", "8")  # set then clear the category, status wont-fix
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        app.open_case("q4", ["q4"])
        await settle(pilot)
        await pilot.press("1", "5")
        await settle(pilot)
        await pilot.press("E")
        await settle(pilot)
        assert isinstance(app.screen, PathPrompt)
        app.screen.query_one(Input).value = str(out)
        await pilot.press("enter")
        await settle(pilot)
    store = NotesStore(notes_path_for(db_path))
    assert [h.category for h in store.history("bm25", "q2")] == ["ingestion", None, None]
    with out.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "case_id",
        "run_id",
        "query",
        "auto_category",
        "auto_rule",
        "user_category",
        "status",
        "note",
        "author",
        "updated_at",
        "nDCG@10",
        "P@5",
        "zero_hit@2",
    ]
    got = {r["case_id"]: r for r in rows}
    assert sorted(got) == ["q1", "q2", "q3", "q4"]
    q1, q2, q3, q4 = (got[c] for c in ("q1", "q2", "q3", "q4"))
    n1 = store.get("bm25", "q1")
    assert n1 is not None
    assert q1 == {
        "case_id": "q1",
        "run_id": "bm25",
        "query": "reset password [red]now[/red]",
        "auto_category": "ranking",
        "auto_rule": "relevant-below-k",
        "user_category": "ranking",
        "status": "confirmed",
        "note": "'=HYPERLINK(x) [b]heading[/b] ranks; ok",
        "author": "ann",
        "updated_at": n1.updated_at,
        "nDCG@10": "0.63",
        "P@5": "0.2",
        "zero_hit@2": "false",
    }
    assert (q2["auto_category"], q2["user_category"], q2["status"], q2["note"]) == ("ingestion", "", "wont-fix", "")
    assert (q3["auto_category"], q3["auto_rule"], q3["author"]) == (
        "dataset; security",
        "acl-no-overlap; label-on-forbidden-unit",
        "",
    )
    # q4 is not a failure but was triaged; its query starts with '=' and is neutralised
    assert (q4["query"], q4["auto_category"], q4["user_category"], q4["status"], q4["nDCG@10"]) == (
        "'=cmd|' /C calc'!A0",
        "",
        "dataset",
        "open",
        "",
    )


@pilot_test
async def test_slice_enter_lists_the_slice_failing_cases(db_path: Path, fake_core: object) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="ann")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        row = app.screen.current_row()  # type: ignore[attr-defined]
        assert row is not None and row["dimension"] == "query_type"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FailuresScreen)
        by_type = {"q1": "lookup", "q2": "howto", "q3": "lookup"}
        assert app.screen.case_ids() == [c for c, t in by_type.items() if t == row["slice_value"]]
        assert f"slice query_type={row['slice_value']}" in static_text(app, "#status")
