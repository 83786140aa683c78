"""What a screen or the command palette may read from, and ask of, the triage app: a small typed protocol.

Screens never import the app (the app imports them): they reach it through :func:`host`, which checks that the
running app provides this protocol, so every use is type-checked and no module of ``tui/`` imports back one that
imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from textual.app import App

from ragtriage.app.browse.reads import RunCache, StoreReader
from ragtriage.classify import Progress
from ragtriage.notes import NotesStore
from ragtriage.tui.case_layout import Rendered


@runtime_checkable
class TriageHost(Protocol):
    """The app's state a view depends on (store, run, baseline, notes) and the requests a view makes of it."""

    db_path: Path
    reader: StoreReader
    cache: RunCache
    store: NotesStore
    run_id: str
    baseline: str | None
    runs: list[str]
    #: The runs Compare listed (open run, baseline, the rest): a case opened from it shows their lists
    compare_runs: tuple[str, ...]
    #: The case the case screen showed last: the list under it puts its cursor there on Escape
    last_case: str | None
    #: Bumped on every saved note (ours or another process's): views showing notes reload when it moved
    notes_version: int
    case_index: list[str]

    def classification_state(self, run_id: str) -> Progress | None: ...

    def start_classifying(self) -> None: ...

    def save_note(self, case_id: str, **fields: str) -> None: ...

    def edit_note(self, case_id: str) -> None: ...

    def open_case(self, case_id: str, case_list: Sequence[str], pos: int | None = None) -> None: ...

    def prefetch_case(self, case_id: str) -> None: ...

    def take_early_case(self, case_id: str) -> Future[Rendered] | None: ...

    def early_case_ready(self, case_id: str, width: int) -> Rendered | None: ...

    def show_view(self, mode: str) -> None: ...

    def use_run(self, run_id: str) -> None: ...

    def view_keys(self) -> tuple[tuple[str, str, str], ...]: ...

    def ensure_case_index(self) -> None: ...

    def action_export(self) -> None: ...

    def action_next_run(self) -> None: ...

    def action_help(self) -> None: ...


def host(app: App[Any]) -> TriageHost:
    """``app`` as the triage host; a screen pushed on another app is a programming error, said plainly."""
    if not isinstance(app, TriageHost):
        raise TypeError(f"{type(app).__name__} does not provide the triage app's protocol (ragtriage.tui.host)")
    return app
