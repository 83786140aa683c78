"""Faults around the inputs (a damaged notes file, a FIFO, a full disk) end in exit 2 and one sentence naming
the cause, never a traceback, a hang or advice that does not fit."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs (root only; skipped where mounting is not allowed), unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path, leave: int) -> None:
    """Fill the disk of ``folder`` until ``leave`` bytes are free."""
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize - leave
    with (folder / "filler").open("wb") as fh:
        fh.write(b"\0" * max(free, 0))


def _content(db: Path) -> list[tuple[str, list[tuple[object, ...]]]]:
    """Every table's rows in a stable order: what "the store is unchanged" means (DuckDB may grow the file)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return [(t, sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall()))) for t in names]
    finally:
        con.close()


def test_load_on_a_full_disk_shows_the_cause_and_keeps_the_store(small_disk: Path, tmp_path: Path) -> None:
    db = small_disk / "s.duckdb"
    res = invoke("load", "--db", db, "--qrels", _write(tmp_path / "q.txt", QRELS), "--topics",
                 _write(tmp_path / "t.tsv", TOPICS), "--no-precompute")  # fmt: skip
    assert res.exit_code == 0, res.output
    before = _content(db)
    run = _write(
        tmp_path / "big.txt", "".join(f"q{1 + i % 2} Q0 doc{i * 7919} {i} {1e6 - i} t\n" for i in range(1, 200_000))
    )
    _fill(small_disk, 256 << 10)
    res = invoke("load", "--db", db, "--run", run, "--run-id", "big", "--no-precompute")
    assert res.exit_code == 2, res.output
    assert no_traceback(res) and "No space left on device" in res.output
    assert "the disk holding the store is full" in res.output and "the store is as it was" in res.output
    assert "IO Error" not in res.output and "Could not write file" not in res.output
    assert "cannot rollback" not in res.output and "no transaction is active" not in res.output
    (small_disk / "filler").unlink()
    assert _content(db) == before
    small = _write(tmp_path / "small.txt", "q1 Q0 docA 1 3.0 t\nq2 Q0 docB 1 2.0 t\n")
    res = invoke("load", "--db", db, "--run", small, "--run-id", "small", "--no-precompute")  # room again: it loads
    assert res.exit_code == 0, res.output
    res = invoke("info", "--db", db)
    assert res.exit_code == 0 and "big" not in res.output and "small" in res.output, res.output


def test_record_on_a_full_disk_exits_2_with_the_cause(small_disk: Path, tmp_path: Path) -> None:
    from tests.record_helpers import write_dataset

    ds = write_dataset(tmp_path / "ds", n=40)
    module = tmp_path / "big_hits.py"
    module.write_text(
        "def search(query, k, **kw):\n    return {'hits': [{'id': f'c{i}', 'doc': 'x' * 4000} for i in range(k)]}\n",
        encoding="utf-8",
    )
    _fill(small_disk, 64 << 10)
    res = runner.invoke(app, ["record", "--dataset", str(ds), "--k", "20", "--no-progress", "--concurrency", "1",
                              "--out", str(small_disk / "run"), "--retriever", f"python:{module}:search",
                              "--hits", "hits", "--id", "id", "--document-id", "id", "--snippet", "doc"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert no_traceback(res) and "No space left on device" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["load", "--db", "{fifo}", "--qrels", "{qrels}"], "is not a regular file"),
        (["info", "--db", "{fifo}"], "is not a regular file"),
        (["export-notes", "--db", "{db}", "--run", "r", "--csv", "{fifo}"], "is not a regular file"),
        (["validate", "{fifo}"], "is not a regular file"),
        (["load", "--db", "{db}", "--run", "{fifo}", "--run-id", "x"], "is not a regular file"),
        (["gate", "--db", "{db}", "--gate", "{fifo}", "--run", "r", "--baseline", "r"], "is not a regular file"),
    ],
)
def test_a_fifo_is_refused_never_waited_on(db: Path, tmp_path: Path, args: list[str], needle: str) -> None:
    import sys

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    qrels = _write(tmp_path / "q.txt", QRELS)
    argv = [a.format(fifo=fifo, db=db, qrels=qrels) for a in args]
    done = subprocess.run([sys.executable, "-m", "ragtriage.cli", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert needle in done.stdout + done.stderr and "Traceback" not in done.stderr
