"""The whole triage flow: failures list → detail → assign category and status → note → next → export CSV."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from textual.widgets import Input, TextArea

from ragtriage.notes import NotesStore, notes_path_for
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.failures import FailuresScreen
from ragtriage.tui.screens.modals import Confirm, NoteEditor, PathPrompt
from tests.tui.helpers import pilot_test, settle, static_text


@pytest.mark.slow
@pilot_test
async def test_failures_list_filters_by_category_and_status(db_path: Path) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="ann")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FailuresScreen)
        rows = screen.shown.to_pylist()  # type: ignore[union-attr]
        # classify.failures of bm25 on the conftest store, one row per case, ids in natural order
        assert [(r["case_id"], r["_auto"], r["rule"]) for r in rows] == [
            ("q2", "ranking", "ranking.candidate-not-promoted"),
            ("q3", "security", "security.leaked-result"),
            ("q4", "ranking", "ranking.negative-answered"),
            ("q10", "dataset", "dataset.label-not-in-snapshot"),
        ]
        await pilot.press("a")  # first category value: dataset
        assert screen.case_ids() == ["q10"]
        await pilot.press("a")  # ranking
        assert screen.case_ids() == ["q2", "q4"]
        await pilot.press("j", "x")
        assert screen.cursor_case() == "q4"  # clearing filters keeps the cursor on its case
        await pilot.press("3", "7")  # ranking, fixed
        await settle(pilot)
        note = NotesStore(notes_path_for(db_path)).get("bm25", "q4")
        assert note is not None and (note.category, note.status, note.author) == ("ranking", "fixed", "ann")
        assert screen.cursor_case() == "q4"  # the list refreshed in place
        await pilot.press("u")  # status filter: fixed
        assert screen.case_ids() == ["q4"]
        await pilot.press("u")  # (untriaged)
        assert screen.case_ids() == ["q2", "q3", "q10"]


@pytest.mark.slow
@pilot_test
async def test_assign_note_next_and_export_csv(db_path: Path, tmp_path: Path) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="ann")
    out = tmp_path / "export.csv"
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen) and app.screen.case_id == "q2"
        why = static_text(app, "#sec-why")
        assert "ranking ranking.candidate-not-promoted  (no-relevant-in-top-k)" in why
        assert "d3#1 grade 2 is at candidate rank 1; k=2" in why
        await pilot.press("3", "6")
        await settle(pilot)
        assert "ranking / confirmed by ann" in static_text(app, "#sec-triage")
        # what the person set is in the header, under the classifier's verdict, on the first screen
        assert "mine ranking / confirmed\n" in static_text(app, "#sec-why")
        assert app.screen.query_one("#sec-why").region.bottom < 24
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
        assert "mine ranking / confirmed · note: =HYPERLINK(x) [b]heading[/b] ranks; ok" in static_text(app, "#sec-why")
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.case_id == "q3"  # type: ignore[attr-defined]
        await pilot.press("2", "0", "8")  # set then clear the category, status wont-fix
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        app.open_case("q1", ["q1"])
        await settle(pilot)
        await pilot.press("1", "5")
        await settle(pilot)
        await pilot.press("E")
        await settle(pilot)
        assert isinstance(app.screen, PathPrompt)
        app.screen.query_one(Input).value = str(out)
        await pilot.press("enter")
        await settle(pilot)
        assert out.exists()
        written = out.read_bytes()
        await pilot.press("E")  # again, to the same file: asks first; n keeps the file as it was
        await settle(pilot)
        app.screen.query_one(Input).value = str(out)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert "exists. Overwrite it?" in str(app.screen.question)
        await pilot.press("n")
        await settle(pilot)
        assert out.read_bytes() == written
    store = NotesStore(notes_path_for(db_path))
    assert [h.category for h in store.history("bm25", "q3")] == ["ingestion", None, None]
    with out.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:10] == [
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
    ]
    got = {r["case_id"]: r for r in rows}
    assert sorted(got) == ["q1", "q10", "q2", "q3", "q4"]
    n2 = store.get("bm25", "q2")
    assert n2 is not None
    q2 = {
        k: v
        for k, v in got["q2"].items()
        if k in ("nDCG@10", "P@10", "zero_hit@10") or not ("@" in k or k.startswith("n_"))
    }
    assert q2 == {
        "case_id": "q2",
        "run_id": "bm25",
        "query": "vpn setup",
        "auto_category": "ranking",
        "auto_rule": "ranking.candidate-not-promoted",
        "user_category": "ranking",
        "status": "confirmed",
        "note": "'=HYPERLINK(x) [b]heading[/b] ranks; ok",
        "author": "ann",
        "updated_at": n2.updated_at,
        "nDCG@10": "0",
        "P@10": "0",
        "zero_hit@10": "true",
    }
    q3 = got["q3"]
    assert (q3["auto_category"], q3["user_category"], q3["status"], q3["note"]) == ("security", "", "wont-fix", "")
    # q1 is not a failure but was triaged; bm25 has its grade-3 unit at rank 2: nDCG@10 = 1/log2(3)
    q1 = got["q1"]
    assert (q1["auto_category"], q1["user_category"], q1["status"]) == ("", "dataset", "open")
    assert float(q1["nDCG@10"]) == pytest.approx(0.6309297535714575)


@pytest.mark.slow
@pilot_test
async def test_slice_enter_lists_the_slice_failing_cases(db_path: Path) -> None:
    app = TriageApp(db_path, "bm25", "hybrid", author="ann")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        row = app.screen.current_row()  # type: ignore[attr-defined]
        assert row is not None and "by query_type" in static_text(app, "#status")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FailuresScreen)
        failing_type = {"q2": "howto", "q3": "lookup", "q4": "negative", "q10": "lookup"}
        assert app.screen.case_ids() == [c for c, t in failing_type.items() if t == row["slice_value"]]
        assert f"slice query_type={row['slice_value']}" in static_text(app, "#status")
