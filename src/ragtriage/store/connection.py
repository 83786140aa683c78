"""Opening a store: one DuckDB file, schema created on first write, refused when it is not a ragtriage store.

A store is shared: a TUI, a CI report and a teammate's ``load`` may open it at once. DuckDB lets one process
write, or several read, and refuses the rest with an IO error; :func:`connect` turns that into
:class:`StoreLocked` (who holds it, one line) and can wait for the lock. Readers that stay open for long (the
TUI) should hold no connection between reads: :func:`reading` opens a short-lived read connection per read, so
a load can go through in between.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.paths import DEFAULT_DB as DEFAULT_DB
from ragtriage.store.file_kind import file_kind
from ragtriage.store.memory_cap import cap_store
from ragtriage.store.schema import CURRENT_VERSION as CURRENT_VERSION
from ragtriage.store.schema import DDL, SCHEMA_VERSION

_PID_RE = re.compile(r"\(PID (\d+)\)")

#: the cutoff a run is judged at when its run.json gives none (TREC and DataFrame runs), and the manifest's
#: ``k_source`` that says so
DEFAULT_RUN_K = 10
DEFAULT_K_SOURCE = "default (no run.json k)"

#: The run listing, the one query every caller asks by name (:func:`run_ids`, :func:`latest_run`).
RUN_IDS = "SELECT run_id FROM runs ORDER BY run_id"
#: The run loaded or created last: what a command given no run shows first.
LATEST_RUN = "SELECT run_id FROM runs ORDER BY created_at DESC NULLS LAST, loaded_at DESC, run_id LIMIT 1"
#: When the store last took a run or a dataset: a result stored before it may be stale (the classifier's rows).
LAST_LOAD = "greatest((SELECT max(loaded_at) FROM runs), (SELECT max(loaded_at) FROM datasets))"


def run_fact(expr: str, run: str = "$run_id") -> str:
    """SQL: ``expr`` (a column, or an expression over ``runs``) of the run ``run`` (a parameter or SQL) as a
    scalar subquery, the one read of a run's own row for the statements that need one of its facts."""
    return f"(SELECT {expr} FROM runs WHERE run_id = {run})"


def run_value(con: duckdb.DuckDBPyConnection, run_id: str, expr: str) -> Any:
    """:func:`run_fact` of ``run_id``, fetched on a cursor of ``con`` (a caller's open result stays usable):
    None for an unknown run or a NULL fact."""
    cur = con.cursor()
    try:
        return cur.execute(f"SELECT {run_fact(expr, '?')}", [run_id]).fetchall()[0][0]
    finally:
        cur.close()


def plain_runs_sql(where: str = "") -> str:
    """SQL: the ids of the runs numbered by rank, cut by ``where`` (a WHERE clause over ``result_rows``). Ranks
    are unique per list (the load refuses duplicates): in a run without repeats whose every list holds ranks
    1..n, a unit's position is its rank, read with no window."""
    return f"""
    SELECT u.run_id FROM runs u JOIN (
        SELECT run_key, sum(top_rank) = sum(n) AS contiguous
        FROM (SELECT run_key, count(*) AS n, max(rank) AS top_rank FROM result_rows{where}
              GROUP BY run_key, case_id, stage)
        GROUP BY run_key) USING (run_key)
    WHERE u.has_repeats IS false AND contiguous"""


class StoreError(Exception):
    """The store cannot be used as asked (missing file, no dataset loaded, unknown run, not a store)."""


class StoreLocked(StoreError):
    """Another process holds the store's lock (a ``load`` writing, or readers while this one wants to write)."""

    def __init__(self, path: str, pid: int | None, holder: str) -> None:
        self.path, self.pid, self.holder = path, pid, holder
        who = f"PID {pid} ({holder})" if pid is not None else "another process"
        super().__init__(f"{path}: store in use by {who}; retry or pass --wait")


def process_label(pid: int) -> str:
    """A short name for a process: the ragtriage command it runs (``load``), else its program's name."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "unknown program"
    words = [a.decode(errors="replace") for a in args if a]
    for i, word in enumerate(words):
        if word.endswith("ragtriage") or word in ("ragtriage.cli", "ragtriage.cli:main"):
            command = next((w for w in words[i + 1 :] if not w.startswith("-")), None)
            return command or "ragtriage"
    return Path(words[0]).name if words else "unknown program"


def lock_error(exc: BaseException, path: str) -> StoreLocked | None:
    """The :class:`StoreLocked` a DuckDB lock conflict means, or None for any other error."""
    if not isinstance(exc, duckdb.IOException) or "Could not set lock" not in str(exc):
        return None
    match = _PID_RE.search(str(exc))
    pid = int(match.group(1)) if match else None
    return StoreLocked(path, pid, process_label(pid) if pid is not None else "unknown program")


def _refuse_non_store_file(path: str, read_only: bool) -> None:
    """One sentence for every path DuckDB would refuse with a traceback (or that it would wrongly accept)."""
    kind = file_kind(path)
    create = f"create it with `ragtriage load --db {path} ...`"
    message = {
        "directory": f"{path} is a directory, not a ragtriage store; pass the store file inside it",
        "special": f"{path} is not a regular file (a FIFO, socket or device), so not a ragtriage store",
        "unreadable": f"{path}: cannot be read (permission denied or a broken link)",
        "empty": f"{path} is an empty file, not a ragtriage store; remove it or pass another --db",
        "sqlite": f"{path} is a SQLite database, not a ragtriage store (notes live in DB.notes.sqlite); "
        "pass the .duckdb store",
        "other": f"{path} is not a DuckDB database, so not a ragtriage store; pass the store or a new path",
    }.get(kind)
    if message is None and kind == "missing" and read_only:
        message = f"{path}: no such database; {create}"
    if message is not None:
        raise StoreError(message)


def _open(
    path: str, read_only: bool, wait: float | None, on_wait: Callable[[StoreLocked], None] | None
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect``, with a lock conflict raised as :class:`StoreLocked` or waited out for ``wait`` seconds
    (``float('inf')``: until it is free); ``on_wait`` is told once when the wait starts (to show a spinner)."""
    deadline = None if wait is None else time.monotonic() + wait
    told = False
    while True:
        try:
            return duckdb.connect(path, read_only=read_only)
        except duckdb.IOException as exc:
            locked = lock_error(exc, path)
            if locked is None:
                raise StoreError(f"{path}: {str(exc).splitlines()[0]}") from exc
            if deadline is None or time.monotonic() >= deadline:
                raise locked from exc
            if on_wait is not None and not told:
                on_wait(locked)
                told = True
            time.sleep(0.1)


def connect(
    path: str | Path = DEFAULT_DB,
    *,
    read_only: bool = False,
    wait: float | None = None,
    on_wait: Callable[[StoreLocked], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open (and for writers, initialise) a store.

    Readers open read-only so that several processes (a TUI, a CLI report) can look at one database at once;
    DuckDB then refuses writers from other processes, which is why triage notes live in a separate file.
    Raises :class:`StoreError` for a path that is not a store (a folder, a text file, a SQLite file, another
    program's DuckDB file: nothing is created in it) and :class:`StoreLocked` when another process holds it
    and ``wait`` (seconds) runs out.
    """
    p = str(path)
    if p != ":memory:":
        _refuse_non_store_file(p, read_only)
    con = _open(p, read_only, wait, on_wait)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    if p != ":memory:":
        cap_store(con)
    _check_store_marker(con, p)
    if not read_only:
        con.execute(DDL)
        con.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO NOTHING", [str(SCHEMA_VERSION)])
    return con


@contextmanager
def reading(path: str | Path, *, wait: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection, closed on exit: a long-lived reader (the TUI) opens one per read
    instead of holding the store, so other processes' loads are not locked out while it sits open."""
    con = connect(path, read_only=True, wait=wait)
    try:
        yield con
    finally:
        con.close()


def _check_store_marker(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """A store is marked by ``meta.schema_version``. A DuckDB file holding other tables without that marker
    belongs to another program and is refused before anything is created in it; a store written by another
    schema version is refused rather than half-read or silently migrated (reloading the files is the
    migration)."""
    tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal"
        ).fetchall()
    }
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() if "meta" in tables else []
    if not rows:
        if tables:
            con.close()
            raise StoreError(
                f"{path} is a DuckDB database of another program, not a ragtriage store (no schema marker); "
                "nothing was written to it; pass a new --db path"
            )
        # asked of DuckDB, so callers need not carry the flag
        if str(con.execute("SELECT current_setting('access_mode')").fetchall()[0][0]).lower() == "read_only":
            con.close()
            raise StoreError(f"{path}: holds no ragtriage store yet; load a dataset into it first")
        return
    if rows[0][0] != str(SCHEMA_VERSION):
        con.close()
        raise StoreError(
            f"{path}: this store has schema version {rows[0][0]}, this ragtriage reads version {SCHEMA_VERSION}; "
            "load the dataset and runs again into a new database (triage notes live in <db>.notes.sqlite: "
            "rename that file to <new db>.notes.sqlite to keep them)"
        )


def current_dataset_version(con: duckdb.DuckDBPyConnection) -> str:
    # fetchall, not fetchone: DuckDB 2 keeps a half-read result open and refuses the caller's next con.sql().
    row = con.execute(f"SELECT {CURRENT_VERSION}").fetchall()[0]
    if row[0] is None:
        raise StoreError("no dataset loaded; run `ragtriage load --dataset DIR` first")
    return str(row[0])


def set_current_dataset(con: duckdb.DuckDBPyConnection, version: str) -> None:
    """Make ``version`` current and rebuild the materialised ``qrels`` (call inside the caller's transaction)."""
    con.execute(
        "INSERT INTO meta VALUES ('current_dataset', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [version],
    )
    con.execute("DELETE FROM qrels")
    # Stored in case order, so each row group holds a narrow range of case ids and a lookup of a few cases (the
    # TUI's case screen) skips the others by their min/max.
    con.execute("INSERT INTO qrels SELECT * FROM qrels_live ORDER BY case_id, unit_id")


def require_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    if run_value(con, run_id, "true") is None:
        raise StoreError(f"unknown run {run_id!r}; loaded runs: {', '.join(run_ids(con)) or 'none'}")


def run_dataset_version(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    """The dataset version the run was loaded against; raises ``StoreError`` for an unknown run."""
    require_run(con, run_id)
    return str(run_value(con, run_id, "dataset_version"))


def run_k(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    """The run's final cutoff (``runs.k``, from run.json); raises ``StoreError`` for an unknown run."""
    return _k_and_source(con, run_id)[0]


def _k_and_source(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, str | None]:
    fact = run_value(con, run_id, "{'k': k, 'source': json_extract_string(manifest, '$.k_source')}")
    if fact is None:
        require_run(con, run_id)  # names the loaded runs
    return int(fact["k"]), fact["source"]


def k_statement(con: duckdb.DuckDBPyConnection, run_id: str, asked: int | None = None) -> str:
    """The cutoff a run is judged at and where it came from, as every output states it: ``4 (--k)`` when a
    user asked one, else ``8 (run.json)`` or ``10 (default)`` (a run loaded without a run.json k)."""
    if asked is not None:
        return f"{asked} (--k)"
    k, source = _k_and_source(con, run_id)
    return f"{k} ({'default' if source == DEFAULT_K_SOURCE else 'run.json'})"


def run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every loaded run id, sorted (:data:`RUN_IDS`)."""
    return [str(r[0]) for r in con.execute(RUN_IDS).fetchall()]


def latest_run(con: duckdb.DuckDBPyConnection) -> str | None:
    """The run created (else loaded) last (:data:`LATEST_RUN`), or None in a store without runs."""
    rows = con.execute(LATEST_RUN).fetchall()
    return str(rows[0][0]) if rows else None
