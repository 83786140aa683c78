"""The notes store keeps every change: merging per field, history, validation, two writers, kill -9."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragtriage.notes import NOTE_SCHEMA, NotesError, NotesStore, notes_path_for


def test_path_beside_database(tmp_path: Path) -> None:
    assert notes_path_for(tmp_path / "t.duckdb") == tmp_path / "t.duckdb.notes.sqlite"
    with pytest.raises(NotesError):
        notes_path_for(":memory:")
    store = NotesStore.open(tmp_path / "t.duckdb")
    assert store.path.exists()


def test_fields_merge_and_history(tmp_path: Path) -> None:
    store = NotesStore(tmp_path / "n.sqlite")
    assert store.get("r", "c1") is None
    store.set("r", "c1", category="ranking", author="ann")
    store.set("r", "c1", status="confirmed", author="bob")
    final = store.set("r", "c1", note="reranker drops [b]it[/b]", author="ann")
    got = store.get("r", "c1")
    assert got == final
    assert got is not None
    assert (got.category, got.status, got.note) == ("ranking", "confirmed", "reranker drops [b]it[/b]")
    assert got.author == "ann"
    hist = store.history("r", "c1")
    assert [(h.category, h.status, h.note, h.author) for h in hist] == [
        ("ranking", None, None, "ann"),
        ("ranking", "confirmed", None, "bob"),
        ("ranking", "confirmed", "reranker drops [b]it[/b]", "ann"),
    ]
    assert [h.updated_at for h in hist] == sorted(h.updated_at for h in hist)


def test_clear_and_overwrite_keep_history(tmp_path: Path) -> None:
    store = NotesStore(tmp_path / "n.sqlite")
    store.set("r", "c1", category="dataset", status="open", note="first", author="a")
    store.set("r", "c1", category="", note="", author="a")
    got = store.get("r", "c1")
    assert got is not None
    assert (got.category, got.status, got.note) == (None, "open", "")
    assert [h.note for h in store.history("r", "c1")] == ["first", ""]


def test_validation(tmp_path: Path) -> None:
    store = NotesStore(tmp_path / "n.sqlite")
    with pytest.raises(NotesError, match="unknown category"):
        store.set("r", "c", category="retrieval", author="a")
    with pytest.raises(NotesError, match="unknown status"):
        store.set("r", "c", status="done", author="a")
    with pytest.raises(NotesError, match="author"):
        store.set("r", "c", status="open", author=" ")
    with pytest.raises(NotesError, match="nothing to change"):
        store.set("r", "c", author="a")
    assert store.all() == []


def test_all_and_arrow_per_run(tmp_path: Path) -> None:
    store = NotesStore(tmp_path / "n.sqlite")
    store.set("r2", "b", status="fixed", author="a")
    store.set("r1", "z", category="security", author="a")
    store.set("r1", "a", note="x", author="a")
    assert [(n.run_id, n.case_id) for n in store.all()] == [("r1", "a"), ("r1", "z"), ("r2", "b")]
    assert [n.case_id for n in store.all("r1")] == ["a", "z"]
    table = store.to_arrow("r1")
    assert table.schema == NOTE_SCHEMA
    assert table.column("category").to_pylist() == [None, "security"]
    assert store.to_arrow("nope").num_rows == 0


def test_durable_settings(tmp_path: Path) -> None:
    store = NotesStore(tmp_path / "n.sqlite")
    store.set("r", "c", status="open", author="a")
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


N_WRITES = 150


def _writer(path: str, who: str, field: str, barrier: mp.synchronize.Barrier) -> None:
    store = NotesStore(path)
    barrier.wait()
    for i in range(N_WRITES):
        # the shared case gets a different field from each writer: both must survive
        store.set("r", "shared", **{field: f"{who}-{i}" if field == "note" else "open"}, author=who)
        store.set("r", f"{who}-{i}", note=f"{who} wrote {i}", author=who)


@pytest.mark.slow
def test_two_processes_lose_no_write(tmp_path: Path) -> None:
    path = str(tmp_path / "n.sqlite")
    NotesStore(path)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [
        ctx.Process(target=_writer, args=(path, "ann", "note", barrier)),
        ctx.Process(target=_writer, args=(path, "bob", "status", barrier)),
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    store = NotesStore(path)
    notes = {n.case_id: n for n in store.all("r")}
    assert len(notes) == 2 * N_WRITES + 1
    for who in ("ann", "bob"):
        for i in range(N_WRITES):
            assert notes[f"{who}-{i}"].note == f"{who} wrote {i}"
    shared = notes["shared"]
    assert (shared.note, shared.status) == (f"ann-{N_WRITES - 1}", "open")
    history = store.history("r", "shared")
    assert len(history) == 2 * N_WRITES
    assert sorted(h.author for h in history) == ["ann"] * N_WRITES + ["bob"] * N_WRITES
    # every history row carries the merged state: once bob has set the status, no later row drops it
    first_bob = next(i for i, h in enumerate(history) if h.author == "bob")
    assert all(h.status == "open" for h in history[first_bob:])


def test_kill_9_loses_no_acknowledged_note(tmp_path: Path) -> None:
    path = tmp_path / "n.sqlite"
    script = textwrap.dedent(
        f"""
        import sys
        from ragtriage.notes import NotesStore
        store = NotesStore({str(path)!r})
        i = 0
        while True:
            store.set("r", f"c{{i}}", note=f"n{{i}}", author="a")
            print(i, flush=True)
            i += 1
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = -1
    while acknowledged < 40:
        acknowledged = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    notes = {n.case_id: n.note for n in NotesStore(path).all("r")}
    for i in range(acknowledged + 1):
        assert notes[f"c{i}"] == f"n{i}"
