"""What the store's corpus manifest can prove: the one place that tells a loaded manifest from a derived one.

A manifest loaded with the dataset (documents.jsonl) lists the whole corpus, so a document it lacks is absent
from the index. A manifest derived from trace metadata (``store/trace_manifest.py``) lists only what retrievers
returned: it proves presence, never absence, so a document it lacks is unknown. Every rule that reads absence
asks :data:`COMPLETE_SQL`; every report and the TUI print :data:`PARTIAL_NOTE` where the manifest is partial.
"""

from __future__ import annotations

import duckdb

MANIFEST_KEY = "corpus_manifest"
PARTIAL_SQL = f"coalesce((SELECT value = 'traces' FROM meta WHERE key = '{MANIFEST_KEY}'), false)"
"""SQL: the store's corpus manifest is derived from trace metadata (partial)."""
COMPLETE_SQL = f"(EXISTS (SELECT 1 FROM documents) AND NOT {PARTIAL_SQL})"
"""SQL: a corpus manifest that lists every document, so a document it lacks is absent (not merely unknown)."""

PARTIAL_LABEL = "corpus manifest: derived from trace metadata, partial"
"""The short form, where a line is narrow (the TUI at 80 columns)."""
PARTIAL_NOTE = (
    f"{PARTIAL_LABEL} (it lists documents the traces returned; a document it does not list is unknown, not "
    "missing from the index; leakage is checked where the metadata names acls)"
)
"""The one line every report and the TUI show where the manifest is partial."""


def manifest_kind(con: duckdb.DuckDBPyConnection) -> str:
    """``none``, ``complete`` (loaded with the dataset) or ``partial`` (derived from trace metadata), as ``con``
    sees it (inside a load's transaction: the rows it wrote)."""
    ((has_docs, partial),) = con.execute(f"SELECT EXISTS (SELECT 1 FROM documents), {PARTIAL_SQL}").fetchall()
    return "none" if not has_docs else "partial" if partial else "complete"


def manifest_note(con: duckdb.DuckDBPyConnection) -> str | None:
    """:data:`PARTIAL_NOTE` when the manifest is partial, else None."""
    return PARTIAL_NOTE if manifest_kind(con) == "partial" else None


def keeps_derived(con: duckdb.DuckDBPyConnection, unit: str) -> bool:
    """A dataset of ``unit`` without a manifest of its own keeps the derived one: the trace runs it was derived
    from are still in the store (a different unit would name other units)."""
    sql = f"SELECT {PARTIAL_SQL} AND coalesce((SELECT unit FROM current_dataset) = ?, false)"
    return bool(con.execute(sql, [unit]).fetchall()[0][0])


def forget_derived(con: duckdb.DuckDBPyConnection) -> None:
    """The documents table is about to hold a loaded manifest (or nothing): it is no longer derived."""
    con.execute("DELETE FROM meta WHERE key = ?", [MANIFEST_KEY])


def mark_derived(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "INSERT INTO meta VALUES (?, 'traces') ON CONFLICT (key) DO UPDATE SET value = 'traces'", [MANIFEST_KEY]
    )
