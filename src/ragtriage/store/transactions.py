"""Ending a transaction that failed, and saying why a write was refused, without hiding the cause.

When DuckDB fails a COMMIT (a full disk while writing the WAL) it has already ended the transaction, so the
ROLLBACK a caller issues next raises "cannot rollback - no transaction is active", and that message replaced the
real one ("No space left on device"). ``rollback`` never raises; ``write_refused`` names the cause of a refused
write with advice that fits it (free space, open the store writable, or the store's own message).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

import duckdb


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK the open transaction, if DuckDB has not ended it already; the error that led here stays the one
    raised."""
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN, then COMMIT when the block ends, or :func:`rollback` when it raises (the block's error stays)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        rollback(con)
        raise


def disk_full(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "no space left" in text or "disk is full" in text or "disk full" in text


def write_refused(exc: BaseException, *, or_else: str = "") -> str:
    """What to do about a write the store refused, from the error's own words; ``or_else`` is the caller's way
    around a read-only store."""
    text = str(exc).lower()
    if disk_full(exc):
        return "the disk holding the store is full: free space and run the command again"
    if "read-only" in text or "read only" in text:
        return "the store is open read-only: open it writable" + (f" {or_else}" if or_else else "")
    return "the store refused the write"
