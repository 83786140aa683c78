"""Paths that are not a ragtriage store: one line and exit 2, nothing created in them; outputs never overwrite
an input; a failed first load leaves no file behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.output_paths import OutputRefused, check_output_path
from ragtriage.store import StoreError, connect
from ragtriage.store.file_kind import file_kind
from tests.factory import make_store, write_dataset

runner = CliRunner()

CASES = [{"id": "q1", "query": "first"}, {"id": "q2", "query": "second"}]
LABELS = [{"case_id": "q1", "document_id": "d1", "chunk_id": "c1", "grade": 3}]
DOCS = [{"document_id": "d1", "chunk_id": "c1", "acl": ["staff"]}]


def _foreign_duckdb(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE invoices (id INTEGER, amount DOUBLE)")
    con.execute("INSERT INTO invoices VALUES (1, 9.5)")
    con.close()
    return path


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a)")
    con.commit()
    con.close()
    return path


def _tables(path: Path) -> list[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall())
    finally:
        con.close()


def test_file_kinds_by_magic_bytes(tmp_path: Path) -> None:
    text = tmp_path / "notes.duckdb"  # the extension lies
    text.write_text("hello")
    (tmp_path / "empty").touch()
    link = tmp_path / "loop"
    link.symlink_to(link)
    kinds = [
        file_kind(p)
        for p in (_foreign_duckdb(tmp_path / "x.bin"), _sqlite(tmp_path / "x.csv"), text, tmp_path / "empty")
    ]
    assert kinds == ["duckdb", "sqlite", "other", "empty"]
    others = (file_kind(tmp_path), file_kind(tmp_path / "nope"), file_kind(link))
    assert others == ("directory", "missing", "unreadable")


@pytest.mark.parametrize("read_only", [True, False])
def test_connect_refuses_every_non_store_and_creates_nothing(tmp_path: Path, read_only: bool) -> None:
    foreign = _foreign_duckdb(tmp_path / "other.duckdb")
    text = tmp_path / "t.txt"
    text.write_text("not a db")
    cases = {
        foreign: "DuckDB database of another program",
        _sqlite(tmp_path / "n.sqlite"): "SQLite database",
        text: "not a DuckDB database",
        tmp_path: "is a directory",
    }
    for path, words in cases.items():
        with pytest.raises(StoreError, match=words):
            connect(path, read_only=read_only)
    assert _tables(foreign) == ["invoices"]
    assert text.read_text() == "not a db"


def test_load_into_a_foreign_duckdb_file_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    foreign = _foreign_duckdb(tmp_path / "other.duckdb")
    ds = write_dataset(tmp_path / "ds", cases=CASES, labels=LABELS, documents=DOCS)
    res = runner.invoke(app, ["load", "--db", str(foreign), "--dataset", str(ds), "--no-precompute"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        f"{foreign} is a DuckDB database of another program, not a ragtriage store (no schema marker); "
        "nothing was written to it; pass a new --db path"
    ]
    assert _tables(foreign) == ["invoices"] and foreign.exists()


@pytest.mark.parametrize("command", [["info"], ["tui"], ["check", "--run", "r"], ["metrics", "--run", "r"]])
def test_reading_commands_on_a_non_store_say_so_in_one_line(tmp_path: Path, command: list[str]) -> None:
    text = tmp_path / "t.duckdb"
    text.write_text("id,query\nq1,x\n")
    res = runner.invoke(app, [*command, "--db", str(text)])
    assert res.exit_code == 2 and res.exception is not None and isinstance(res.exception, SystemExit)
    assert res.output.strip().splitlines() == [
        f"{text} is not a DuckDB database, so not a ragtriage store; pass the store or a new path"
    ]


def test_failed_first_load_leaves_no_file(tmp_path: Path) -> None:
    db = tmp_path / "new.duckdb"
    ds = write_dataset(tmp_path / "ds", cases=CASES, labels=[{**LABELS[0], "grade": 9}], documents=DOCS)
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(ds), "--no-precompute"])
    assert res.exit_code == 2 and "grade 9 is outside the scale 0..3" in res.output
    assert not db.exists() and not Path(f"{db}.wal").exists()


def test_failed_load_into_an_existing_store_keeps_it(tmp_path: Path) -> None:
    make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS).close()
    db = tmp_path / "store.duckdb"
    bad = write_dataset(tmp_path / "bad", cases=CASES, labels=[{**LABELS[0], "grade": 9}], documents=DOCS)
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(bad), "--no-precompute"])
    assert res.exit_code == 2 and db.exists()
    assert connect(db, read_only=True).execute("SELECT count(*) FROM cases").fetchall() == [(2,)]


def test_info_says_when_it_caps_the_warning_list(tmp_path: Path) -> None:
    docs = [{"document_id": f"d{i}", "chunk_id": f"c{i}"} for i in range(7)]  # 7 no-acl warnings
    make_store(tmp_path, cases=CASES, labels=LABELS, documents=docs).close()
    db = str(tmp_path / "store.duckdb")
    res = runner.invoke(app, ["info", "--db", db, "--warnings", "--limit", "3"])
    assert res.exit_code == 0
    listed = [ln for ln in res.output.splitlines() if "has no acl" in ln]
    assert len(listed) == 3
    assert "3 of 7 warnings shown; --limit 0 lists all" in res.output
    res = runner.invoke(app, ["info", "--db", db, "--warnings", "--limit", "0"])
    assert len([ln for ln in res.output.splitlines() if "has no acl" in ln]) == 7
    assert "warnings shown" not in res.output


def test_output_path_refuses_inputs(tmp_path: Path) -> None:
    db = tmp_path / "triage.duckdb"
    make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, db=db.name).close()
    notes = _sqlite(Path(f"{db}.notes.sqlite"))
    other_db = _sqlite(tmp_path / "elsewhere.csv")
    existing = tmp_path / "old.csv"
    existing.write_text("keep me")
    refusals = {
        db: "is the store",
        notes: "is the store's notes file",
        other_db: "is a SQLite database",
        tmp_path / "sub" / ".." / "triage.duckdb": "is the store",
        existing: "exists; pass --force",
        tmp_path: "is a directory",
        tmp_path / "no-such-dir" / "x.csv": "does not exist",
    }
    for path, words in refusals.items():
        with pytest.raises(OutputRefused, match=words):
            check_output_path(path, store=db)
    (tmp_path / "sub").mkdir()
    with pytest.raises(OutputRefused, match="is the store"):
        check_output_path(tmp_path / "sub" / ".." / "triage.duckdb", store=db, force=True)
    with pytest.raises(OutputRefused, match="SQLite database"):
        check_output_path(other_db, store=db, force=True)
    assert check_output_path(existing, store=db, force=True) == existing
    assert existing.read_text() == "keep me"
