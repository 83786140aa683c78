"""Triage notes that are never lost.

DuckDB admits one writing process per file and the analysis connection is read-only (so several people can open
one database), so notes live in a SQLite file beside the database: ``<db>.notes.sqlite``.

Durability and concurrency come from SQLite itself:

- WAL journal with ``synchronous=FULL``: a committed note is fsynced before ``set`` returns, so a crash or
  ``kill -9`` right after it loses nothing;
- every change is one short ``BEGIN IMMEDIATE`` transaction that reads the current row, merges the fields given
  and writes both the current row and an append-only history row. The write lock is taken before the read, so
  two processes changing different fields of one note both keep their change (last writer wins per field) and
  nothing is overwritten without a history row;
- ``busy_timeout`` plus a bounded retry with backoff for the rare ``database is locked`` that escapes it.

A connection is opened per call: it costs well under a millisecond, is safe across threads (TUI workers) and
across ``fork`` (multiprocessing), and leaves no open handle to a file another process may be writing.
"""

from __future__ import annotations

import getpass
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from ragtriage.contract.categories import CATEGORIES as CATEGORIES

STATUSES = ("open", "confirmed", "fixed", "wont-fix")
NOTES_SUFFIX = ".notes.sqlite"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000
RETRIES = 8

_DDL = """
CREATE TABLE IF NOT EXISTS note_history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    case_id TEXT NOT NULL,
    category TEXT,
    status TEXT,
    note TEXT,
    author TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    changed TEXT NOT NULL          -- comma-separated fields this change set
);
CREATE INDEX IF NOT EXISTS note_history_case ON note_history (run_id, case_id, seq);
CREATE TABLE IF NOT EXISTS notes_current (
    run_id TEXT NOT NULL,
    case_id TEXT NOT NULL,
    category TEXT,
    status TEXT,
    note TEXT,
    author TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    seq INTEGER NOT NULL,          -- the history row this state comes from
    PRIMARY KEY (run_id, case_id)
);
"""

NOTE_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("status", pa.string()),
        pa.field("note", pa.string()),
        pa.field("author", pa.string(), nullable=False),
        pa.field("updated_at", pa.string(), nullable=False),
    ]
)

T = TypeVar("T")


class NotesError(Exception):
    """A note cannot be stored as asked (unknown category or status, missing author, file not writable)."""


class NotesDamaged(NotesError):
    """The notes file is not a readable SQLite database: nothing can be read from it or written to it."""


@dataclass(frozen=True)
class Note:
    """The state of one case's triage after a change (``history``) or now (``get``/``all``)."""

    run_id: str
    case_id: str
    category: str | None
    status: str | None
    note: str | None
    author: str
    updated_at: str


def notes_path_for(db_path: str | Path) -> Path:
    """The notes file that belongs to a DuckDB store: ``triage.duckdb`` → ``triage.duckdb.notes.sqlite``."""
    p = str(db_path)
    if p == ":memory:":
        raise NotesError("an in-memory database has no notes file; pass a notes path to NotesStore(...)")
    return Path(p + NOTES_SUFFIX)


def default_author() -> str:
    """Who is triaging: ``$RAGTRIAGE_AUTHOR`` when set, else the login name."""
    env = os.environ.get("RAGTRIAGE_AUTHOR", "").strip()
    if env:
        return env
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry (containers): still attribute the change to something stable
        return "unknown"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _check(value: str | None, allowed: tuple[str, ...], what: str) -> None:
    if value not in (None, "") and value not in allowed:
        raise NotesError(f"unknown {what} {value!r}; use one of: {', '.join(allowed)} (or '' to clear)")


_ACCESS = ("SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_AUTH")


def _open_error(path: Path, exc: sqlite3.DatabaseError) -> NotesError:
    """What went wrong opening the notes file, with advice that fits: access, a full disk, or a damaged file."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(_ACCESS):
        return NotesError(f"{path}: cannot open the notes file ({exc}); check the directory is writable")
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")):
        return NotesError(f"{path}: cannot write the notes file ({exc}); free space on its disk and try again")
    return NotesDamaged(_damaged(path, exc))


def _damaged(path: Path, exc: sqlite3.DatabaseError) -> str:
    return (
        f"{path}: the notes file is damaged ({exc}); nothing was changed. Move it aside to start a new one, or "
        f"recover it with `sqlite3 {path.name} .recover`"
    )


class NotesStore:
    """Per-case triage notes (category, status, free text) with full history, safe for concurrent writers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            with self._connect() as con:
                con.executescript(_DDL)
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise _open_error(self.path, exc) from exc

    @classmethod
    def open(cls, db_path: str | Path) -> NotesStore:
        """The notes store beside a DuckDB database (created on first use)."""
        return cls(notes_path_for(db_path))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # isolation_level=None: we issue BEGIN IMMEDIATE ourselves so the write lock precedes the read.
        con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA synchronous = FULL")
            yield con
        finally:
            con.close()

    def _retry(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        delay = 0.01
        for attempt in range(RETRIES):
            try:
                with self._connect() as con:
                    return fn(con)
            except sqlite3.OperationalError as exc:
                transient = "locked" in str(exc) or "busy" in str(exc)
                if not transient or attempt == RETRIES - 1:
                    raise NotesError(f"{self.path}: {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
            except sqlite3.DatabaseError as exc:  # not a database, malformed image: retrying cannot help
                raise NotesDamaged(_damaged(self.path, exc)) from exc
        raise AssertionError("unreachable")

    def set(
        self,
        run_id: str,
        case_id: str,
        *,
        category: str | None = None,
        status: str | None = None,
        note: str | None = None,
        author: str,
    ) -> Note:
        """Change the fields given (``None`` leaves a field as it is, ``''`` clears it); returns the new state.

        The change is durable when this returns.
        """
        _check(category, CATEGORIES, "category")
        _check(status, STATUSES, "status")
        if not author or not author.strip():
            raise NotesError("a note needs an author (set $RAGTRIAGE_AUTHOR or pass author=)")
        given = {"category": category, "status": status, "note": note}
        changed = [k for k, v in given.items() if v is not None]
        if not changed:
            raise NotesError("nothing to change: give category, status or note")

        def write(con: sqlite3.Connection) -> Note:
            con.execute("BEGIN IMMEDIATE")  # outside the try: if it fails there is nothing to roll back
            try:
                row = con.execute(
                    "SELECT category, status, note FROM notes_current WHERE run_id = ? AND case_id = ?",
                    (run_id, case_id),
                ).fetchone()
                merged = dict(zip(("category", "status", "note"), row or (None, None, None), strict=True))
                for k in changed:
                    v = given[k]
                    merged[k] = None if v == "" and k != "note" else v
                now = _now()
                values = (run_id, case_id, merged["category"], merged["status"], merged["note"], author, now)
                cur = con.execute(
                    "INSERT INTO note_history (run_id, case_id, category, status, note, author, updated_at, changed)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*values, ",".join(changed)),
                )
                con.execute(
                    "INSERT INTO notes_current VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (run_id, case_id) DO UPDATE SET category = excluded.category,"
                    " status = excluded.status, note = excluded.note, author = excluded.author,"
                    " updated_at = excluded.updated_at, seq = excluded.seq",
                    (*values, cur.lastrowid),
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            return Note(*values)

        return self._retry(write)

    def get(self, run_id: str, case_id: str) -> Note | None:
        rows = self._select("notes_current WHERE run_id = ? AND case_id = ?", (run_id, case_id))
        return rows[0] if rows else None

    def all(self, run_id: str | None = None) -> list[Note]:
        """Current notes, by run then case."""
        if run_id is None:
            return self._select("notes_current ORDER BY run_id, case_id", ())
        return self._select("notes_current WHERE run_id = ? ORDER BY case_id", (run_id,))

    def history(self, run_id: str, case_id: str) -> list[Note]:
        """Every state the note went through, oldest first."""
        return self._select("note_history WHERE run_id = ? AND case_id = ? ORDER BY seq", (run_id, case_id))

    def to_arrow(self, run_id: str | None = None) -> pa.Table:
        """Current notes as an Arrow table (``NOTE_SCHEMA``), for joining in DuckDB."""
        notes = self.all(run_id)
        columns = {name: [getattr(n, name) for n in notes] for name in NOTE_SCHEMA.names}
        return pa.table(columns, schema=NOTE_SCHEMA)

    def _select(self, source: str, params: tuple[str, ...]) -> list[Note]:
        sql = f"SELECT run_id, case_id, category, status, note, author, updated_at FROM {source}"
        return self._retry(lambda con: [Note(*r) for r in con.execute(sql, params).fetchall()])
