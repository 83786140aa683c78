"""What a path holds, told by its first bytes: a DuckDB database, a SQLite database, another file, a folder.

Opening a text file or another program's database as a store must end in one clear sentence, not a DuckDB
traceback; and an output path must never name a database (a store, its notes, anyone's SQLite file), whatever
its extension says. Both decisions read the magic bytes here, once.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Literal

Kind = Literal["missing", "directory", "special", "empty", "duckdb", "sqlite", "other", "unreadable"]

# DuckDB's main header: 8 bytes of checksum, then the magic "DUCK"; SQLite's header starts with its own name.
_DUCKDB_MAGIC = (8, b"DUCK")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def file_kind(path: str | Path) -> Kind:
    """The kind of ``path``; a broken symlink or unreadable file is ``unreadable``, never an exception. A FIFO,
    socket or device is ``special``, told by ``stat`` alone: opening a FIFO to read its first bytes would wait
    for a writer forever."""
    p = Path(path)
    try:
        if p.is_dir():
            return "directory"
        if not p.exists():
            return "unreadable" if p.is_symlink() else "missing"
        if not stat.S_ISREG(p.stat().st_mode):
            return "special"
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError:
        return "unreadable"
    if not head:
        return "empty"
    offset, magic = _DUCKDB_MAGIC
    if head[offset : offset + len(magic)] == magic:
        return "duckdb"
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    return "other"
