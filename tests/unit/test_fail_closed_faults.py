"""Faults around the inputs (a damaged notes file, a FIFO, a full disk) end in exit 2 and one sentence naming
the cause, never a traceback, a hang or advice that does not fit."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from ragtriage.cli import app
from ragtriage.notes import NotesDamaged, NotesStore, notes_path_for
from tests.bad_inputs import no_traceback
from tests.unit.test_fail_closed_inputs import QRELS, RUN, TOPICS, _write

runner = CliRunner()


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faults")
    db = root / "base.duckdb"
    res = invoke("load", "--db", db, "--qrels", _write(root / "q.txt", QRELS), "--topics",
                 _write(root / "t.tsv", TOPICS), "--run", _write(root / "r.txt", RUN), "--run-id", "r")  # fmt: skip
    assert res.exit_code == 0, res.output
    return db


@pytest.fixture
def db(base: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(base, tmp_path / "store.duckdb"))


DAMAGE = {
    "not a database": os.urandom(8192),
    "malformed": b"SQLite format 3\x00" + b"\x10\x00\x01\x01\x00\x40\x20\x20" + os.urandom(8192 - 24),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize(
    "command",
    [
        ["failures", "--run", "r"],
        ["export-notes", "--run", "r", "--csv", "{tmp}/notes.csv"],
        ["tui", "--run", "r"],
    ],
)
def test_damaged_notes_file_exits_2_with_a_message(db: Path, tmp_path: Path, damage: str, command: list[str]) -> None:
    notes = notes_path_for(db)
    notes.write_bytes(DAMAGE[damage])
    before = notes.read_bytes()
    res = invoke(*[c.replace("{tmp}", str(tmp_path)) for c in command], "--db", db)
    assert res.exit_code == 2, res.output
    assert no_traceback(res) and "Traceback" not in res.output
    assert "the notes file is damaged" in res.output and "sqlite3" in res.output
    assert notes.read_bytes() == before
    assert not (tmp_path / "notes.csv").exists()


def test_damaged_notes_file_raises_a_notes_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.notes.sqlite", DAMAGE["not a database"])
    with pytest.raises(NotesDamaged, match="the notes file is damaged"):
        NotesStore(path)
