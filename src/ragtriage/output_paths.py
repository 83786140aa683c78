"""Outputs never destroy inputs: the one check every command runs on a path it is about to write.

A mistyped ``--csv triage.duckdb`` must not replace the store, nor ``--csv triage.duckdb.notes.sqlite`` the
notes. So before any file is written (``--csv``, ``--out``,
``--junit``, ``--markdown``, ``--json``, ``--html``) its path is refused when it is

- the store, its write-ahead log or its notes file (compared after resolving links);
- any DuckDB or SQLite database, told by its magic bytes whatever its name (``--force`` does not override);
- a folder, or a FIFO, socket or device (writing to a FIFO waits for a reader forever);
- an existing file, unless the user passed ``--force``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ragtriage.notes.store import NOTES_SUFFIX
from ragtriage.store.file_kind import file_kind


def name_part(text: str) -> str:
    """A data string (a run id) as part of a default file name: letters, digits, ``.``, ``_`` and ``-`` kept,
    every other run of characters (path separators, spaces, control bytes) one ``_``; never empty."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"


class OutputRefused(ValueError):
    """The output path would overwrite an input; the message says which and what to do."""


def _protected(store: str | Path | None) -> dict[Path, str]:
    if store is None or str(store) == ":memory:":
        return {}
    db = Path(store)
    notes = f"{db}{NOTES_SUFFIX}"
    paths = {db: "the store", Path(f"{db}.wal"): "the store's write-ahead log", Path(notes): "the store's notes file"}
    for suffix in ("-journal", "-wal", "-shm"):
        paths[Path(notes + suffix)] = "the notes file's journal"
    return {p.resolve(): what for p, what in paths.items()}


def check_output_path(path: str | Path, *, store: str | Path | None = None, force: bool = False) -> Path:
    """Return ``path`` when it is safe to write; raise :class:`OutputRefused` otherwise (see the module doc)."""
    out = Path(path)
    what = _protected(store).get(out.resolve())
    if what:
        raise OutputRefused(f"{out} is {what}; writing there would destroy it. Pass another output path")
    kind = file_kind(out)
    if kind in ("duckdb", "sqlite"):
        name = "DuckDB" if kind == "duckdb" else "SQLite"
        raise OutputRefused(f"{out} is a {name} database; ragtriage never writes an output over a database")
    if kind == "directory":
        raise OutputRefused(f"{out} is a directory; pass a file path")
    if kind == "special":
        raise OutputRefused(f"{out} is not a regular file (a FIFO, socket or device); pass a file path")
    if kind != "missing" and not force:
        raise OutputRefused(f"{out} exists; pass --force to overwrite it")
    if not out.parent.is_dir():
        raise OutputRefused(f"{out}: the folder {out.parent} does not exist")
    return out
