"""What the app reads from its store before a view opens (:class:`StoreState`, the case index) and the
watch on the notes file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import NamedTuple

import duckdb

from ragtriage.app.browse.reads import natural_order
from ragtriage.classify import Progress, pending, progress
from ragtriage.store import StoreError, connect, run_ids


class StoreState(NamedTuple):
    """What the app reads from its store before a view opens."""

    runs: list[str]
    run_id: str
    baseline: str | None
    #: Runs whose classification this app stores in the background, and how far each is
    classifying: dict[str, Progress]


def store_state(db: Path, run_id: str | None, baseline: str | None) -> StoreState:
    """The runs, the one to open (``run_id``, else the newest) and its baseline, and the runs left to classify
    (a short read-only open)."""
    con = connect(db, read_only=True)
    try:
        runs = run_ids(con)
        newest = con.execute(
            "SELECT run_id FROM runs ORDER BY created_at DESC NULLS LAST, loaded_at DESC, run_id LIMIT 1"
        ).fetchone()
        classifying = {rid: progress(con, rid) for rid in pending(con)}
    finally:
        con.close()
    if not runs:
        raise StoreError(f"{db}: no run loaded; load one with `ragtriage load --db {db} --run DIR`")
    for name, value in (("run", run_id), ("baseline", baseline)):
        if value is not None and value not in runs:
            raise StoreError(f"unknown {name} {value!r}; loaded runs: {', '.join(runs)}")
    opened = run_id or (newest[0] if newest else runs[-1])
    return StoreState(runs, opened, baseline or next((r for r in runs if r != opened), None), classifying)


def case_index(cur: duckdb.DuckDBPyConnection) -> list[str]:
    """Every case id of the current dataset in natural order (the command palette's)."""
    table = cur.sql("SELECT case_id FROM cases").to_arrow_table()
    return [str(c) for c in natural_order(table, "case_id").column(0).to_pylist()]


# The cases' ranked lists with what the flags need: grade (unjudged when NULL), the document's status, whether
# the unit is in the corpus snapshot (unknown, so never flagged, without a manifest), and whether it repeats a
# unit ranked higher in the same list; unknown too with a manifest derived from traces, which lists only what was


class NotesWatch:
    """Tells whether another connection committed to the notes file since the last look: SQLite's
    ``PRAGMA data_version`` on one connection kept for this, a microsecond read with no table scan."""

    def __init__(self, path: Path) -> None:
        self._con: sqlite3.Connection | None = None
        try:
            self._con = sqlite3.connect(path, check_same_thread=False)
            self._seen = self._version()
        except sqlite3.Error:
            self._con = None

    def _version(self) -> int:
        assert self._con is not None
        row = self._con.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def changed(self) -> bool:
        if self._con is None:
            return False
        try:
            now = self._version()
        except sqlite3.Error:
            return False
        seen, self._seen = self._seen, now
        return now != seen

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
