"""A store loaded without its classification (what `ragtriage load` leaves): the TUI shows the Overview's metrics
first, classifies in the background a chunk at a time, Failures fills in with a progress line, a case opened before
its chunk is classified on the spot, and the run ends stored (the next opening reads it)."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from ragtriage.classify import chunked, facts, failure_list, progress
from ragtriage.store import connect
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.failures import FailuresScreen
from tests.tui.helpers import pilot_test, settle, static_text, until


@pytest.mark.slow
@pilot_test
async def test_overview_first_then_failures_fill_in(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    con = connect(db_path, read_only=True)
    try:
        whole = failure_list(con, "bm25")  # classified in memory: what the list holds once complete
        assert progress(con, "bm25").chunks == 0 and not progress(con, "bm25").complete
    finally:
        con.close()
    assert whole.num_rows >= 3
    monkeypatch.setattr(facts, "CHUNK_ROWS", 1)  # one case a chunk
    release = threading.Event()
    real = chunked.chunk_facts
    calls = 0

    def gated(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, lo: str | None, hi: str | None) -> pa.Table:
        nonlocal calls
        calls += 1
        if calls == 3:  # two chunks stored, then the classification waits for the test
            release.wait()
        return real(cur, run_id, k, lo, hi)

    monkeypatch.setattr(chunked, "chunk_facts", gated)
    app = TriageApp(db_path, "bm25", "hybrid", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: "nDCG@" in static_text(app, "#sec-summary"))
        await until(lambda: calls >= 3)
        state = app.classification_state("bm25")
        assert state is not None and not state.complete and state.done == 2
        await until(lambda: "classifying in the background" in static_text(app, "#sec-categories"))
        assert "2 of" in static_text(app, "#sec-categories")
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, FailuresScreen)
        await until(lambda: screen.source is not None and "PARTIAL: classifying 2/" in static_text(app, "#status"))
        assert screen.source is not None and screen.source.num_rows < whole.num_rows
        release.set()
        await until(lambda: app.classification_state("bm25") is None and app.classification_state("hybrid") is None)
        await settle(pilot)
        assert "PARTIAL" not in static_text(app, "#status")
        assert screen.source is not None
        assert sorted(screen.source.column("case_id").to_pylist()) == sorted(whole.column("case_id").to_pylist())
        await pilot.press("o")
        await settle(pilot)
        assert "Failures per category, cost in nDCG@2" in static_text(app, "#sec-categories")
    con = connect(db_path, read_only=True)
    try:
        assert progress(con, "bm25").complete and progress(con, "hybrid").complete
    finally:
        con.close()
    second = TriageApp(db_path, "bm25", "hybrid", author="tester")
    assert second.classifying == {}  # the next opening reads the stored classification


@pytest.mark.slow
@pilot_test
async def test_a_case_opened_before_its_chunk_is_classified_on_the_spot(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = connect(db_path, read_only=True)
    try:
        whole = failure_list(con, "bm25")
    finally:
        con.close()
    last = sorted(whole.column("case_id").to_pylist())[-1]
    monkeypatch.setattr(facts, "CHUNK_ROWS", 1)
    release = threading.Event()
    real = chunked.chunk_facts

    def held(cur: duckdb.DuckDBPyConnection, run_id: str, k: int, lo: str | None, hi: str | None) -> pa.Table:
        release.wait()  # nothing is stored until the test is done
        return real(cur, run_id, k, lo, hi)

    monkeypatch.setattr(chunked, "chunk_facts", held)
    app = TriageApp(db_path, "bm25", "hybrid", author="tester")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(lambda: "nDCG@" in static_text(app, "#sec-summary"))
            app.open_case(last, [last])
            await until(lambda: "Automatic classification" in _case_text(app))
            text = _case_text(app)
            rule = whole.filter(pa.compute.equal(whole.column("case_id"), last)).column("rule")[0].as_py()
            assert rule.split("; ")[0] in text
            state = app.classification_state("bm25")
            assert state is not None and state.done == 0  # classified on the spot, not by the background
            release.set()
            await settle(pilot)
    finally:
        release.set()


def _case_text(app: TriageApp) -> str:
    from tests.tui.helpers import plain

    return "\n".join(plain(w.content) for w in app.screen.query("Static"))
