"""Triage notes: a durable, concurrent-safe SQLite store beside the DuckDB database, and the CSV export."""

from ragtriage.notes.store import (
    CATEGORIES,
    NOTE_SCHEMA,
    STATUSES,
    Note,
    NotesDamaged,
    NotesError,
    NotesStore,
    default_author,
    notes_path_for,
)

__all__ = [
    "CATEGORIES",
    "NOTE_SCHEMA",
    "STATUSES",
    "Note",
    "NotesDamaged",
    "NotesError",
    "NotesStore",
    "default_author",
    "notes_path_for",
]
