"""DuckDB's working memory, capped so that a load of a large run, and every command reading a store, stays near
1 GiB (:func:`cap_store`, applied by ``store.connect`` to every file store).

DuckDB's own limit is 80% of the machine's memory. Under it, a load's large steps (the insert, the groupings of
the rules) grow their buffers with the run. Under a 1 GiB limit DuckDB partitions the same work (spilling to the
store's ``.tmp`` folder if it must) and finishes no later, in a fraction of the memory (``bench/scale_bench.py``
measures both; docs/performance.md). The duplicate-in-list check's sorted hashes (``contract.rules
.repeated_hashes``, 8 bytes a result row) are numpy's, outside the cap.

The classification that ``ragtriage load`` runs afterwards (``classify.refresh``) is capped too. It works a chunk
of cases at a time (``classify.facts.fact_chunks``), so under the cap it spills little; one statement over every
case would spill heavily.

The in-memory database of an evaluation without a store (``ragtriage.evaluate``, the store-less ``metrics``) is
capped for its whole life (:func:`cap_in_memory`), spilling to a folder of its own in the system's temp directory,
so a large TREC run evaluated without a store stays bounded too.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

LOAD_LIMIT = 1 << 30
"""Bytes of working memory DuckDB may use during a load (when the machine's default is larger)."""


def _default_limit() -> int | None:
    """DuckDB's default memory limit, 80% of physical memory (None where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.8)
    except (AttributeError, ValueError, OSError):  # no os.sysconf (Windows) or no such name
        return None


def _lowers(limit: int) -> bool:
    """Whether ``limit`` is below DuckDB's default (a machine smaller than the cap keeps its own limit; a
    platform that does not say is capped)."""
    default = _default_limit()
    return default is None or default > limit


@contextmanager
def capped(con: duckdb.DuckDBPyConnection, limit: int = LOAD_LIMIT) -> Iterator[None]:
    """DuckDB's memory limit lowered to ``limit`` for the block on a file store, then back to its default.

    The limit is the database's, not the connection's: cursors of ``con`` share it while the block runs."""
    on_disk = con.execute("SELECT path IS NOT NULL FROM duckdb_databases() WHERE database_name = current_database()")
    if not on_disk.fetchall()[0][0] or not _lowers(limit):
        yield
        return
    before = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    con.execute(f"SET memory_limit = '{int(limit)}B'")
    try:
        yield
    finally:
        con.execute("SET memory_limit = ?", [str(before)])


def cap_store(con: duckdb.DuckDBPyConnection, limit: int = LOAD_LIMIT) -> None:
    """Cap a file store's working memory at ``limit`` for the connection's life (when the machine's default is
    larger): every command reading a store (metrics, compare, report, gate, the TUI) then spills to the store's
    ``.tmp`` folder instead of growing with the run, as a load does under :func:`capped`."""
    if _lowers(limit):
        con.execute(f"SET memory_limit = '{int(limit)}B'")


def cap_in_memory(con: duckdb.DuckDBPyConnection, limit: int = LOAD_LIMIT) -> None:
    """Cap an in-memory database's working memory at ``limit`` (when the machine's default is larger) and let it
    spill to a folder of its own under the system's temp directory, which DuckDB creates at the first spill and
    removes when the connection closes. The folder's name is not guessable (the temp directory is shared)."""
    if not _lowers(limit):
        return
    folder = os.path.join(tempfile.gettempdir(), f"ragtriage-spill-{os.getpid()}-{secrets.token_hex(8)}")
    con.execute("SET temp_directory = ?", [folder])
    con.execute(f"SET memory_limit = '{int(limit)}B'")
