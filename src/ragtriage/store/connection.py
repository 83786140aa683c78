"""Opening a store: one DuckDB file, schema created on first write."""

from __future__ import annotations

from pathlib import Path

import duckdb

from ragtriage.paths import DEFAULT_DB as DEFAULT_DB
from ragtriage.store.schema import DDL, SCHEMA_VERSION


class StoreError(Exception):
    """The store cannot be used as asked (missing file, no dataset loaded, unknown run)."""


def connect(path: str | Path = DEFAULT_DB, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and for writers, initialise) a store.

    Readers open read-only so that several processes (a TUI, a CLI report) can look at one database at once;
    DuckDB then refuses writers from other processes, which is why triage notes live in a separate file.
    """
    p = str(path)
    if p != ":memory:" and read_only and not Path(p).exists():
        raise StoreError(f"{p}: no such database; create it with `ragtriage load --db {p} ...`")
    con = duckdb.connect(p, read_only=read_only)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    _check_schema_version(con, p)
    if not read_only:
        con.execute(DDL)
        con.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING", [str(SCHEMA_VERSION)])
    return con


def _check_schema_version(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """A store written by another schema version is refused rather than half-read or silently migrated: a store
    is derived from the input files, so reloading them is the migration."""
    has_meta = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'meta' AND schema_name = 'main'"
    ).fetchall()[0][0]
    if not has_meta:
        return
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    if rows and rows[0][0] != str(SCHEMA_VERSION):
        con.close()
        raise StoreError(
            f"{path}: this store has schema version {rows[0][0]}, this ragtriage reads version {SCHEMA_VERSION}; "
            "load the dataset and runs again into a new database (triage notes live in <db>.notes.sqlite: "
            "rename that file to <new db>.notes.sqlite to keep them)"
        )


def current_dataset_version(con: duckdb.DuckDBPyConnection) -> str:
    # fetchall, not fetchone: DuckDB 2 keeps a half-read result open and refuses the caller's next con.sql().
    rows = con.execute("SELECT value FROM meta WHERE key = 'current_dataset'").fetchall()
    row = rows[0] if rows else None
    if row is None:
        raise StoreError("no dataset loaded; run `ragtriage load --dataset DIR` first")
    return str(row[0])


def set_current_dataset(con: duckdb.DuckDBPyConnection, version: str) -> None:
    """Make ``version`` current and rebuild the materialised ``qrels`` (call inside the caller's transaction)."""
    con.execute(
        "INSERT INTO meta VALUES ('current_dataset', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [version],
    )
    con.execute("DELETE FROM qrels")
    con.execute("INSERT INTO qrels SELECT * FROM qrels_live")


def require_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    if not con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchall():
        known = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        raise StoreError(f"unknown run {run_id!r}; loaded runs: {', '.join(known) or 'none'}")


def run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
