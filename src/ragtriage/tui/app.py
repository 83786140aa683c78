"""The triage app: one mode per top-level view, a read-only DuckDB connection, and one ordered notes writer.

- The analysis connection is read-only so several people (and CLI reports) can open one database; each worker
  takes its own cursor from it.
- Notes go through one queue to one writer worker, so two quick keys on one case are stored in the order
  pressed; the footer says "saved" only once SQLite has committed the change. Quitting drains the queue.
"""

from __future__ import annotations

import importlib
import queue
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from ragtriage.notes import Note, NotesError, NotesStore, default_author, notes_path_for
from ragtriage.store import StoreError, connect
from ragtriage.tui.commands import TriageCommands
from ragtriage.tui.data import RunCache
from ragtriage.tui.screens.base import VIEW_KEYS
from ragtriage.tui.screens.overview import OverviewScreen

_STOP = object()


def lazy(module: str, name: str) -> Callable[[], Screen[Any]]:
    """A view made on first use: the modules of the views not shown at start-up are imported then, not before
    the overview's first paint (the note editor alone pulls in TextArea)."""

    def make() -> Screen[Any]:
        cls: type[Screen[Any]] = getattr(importlib.import_module(f"ragtriage.tui.screens.{module}"), name)
        return cls()

    return make


class NoteSaved(Message):
    def __init__(self, note: Note) -> None:
        super().__init__()
        self.note = note


class NoteFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class TriageApp(App[None]):
    TITLE = "ragtriage"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {TriageCommands}
    MODES: ClassVar[dict[str, Any]] = {
        "overview": OverviewScreen,
        "slices": lazy("lists", "SlicesScreen"),
        "zerohit": lazy("lists", "ZeroHitScreen"),
        "leakage": lazy("lists", "LeakageScreen"),
        "failures": lazy("failures", "FailuresScreen"),
        "compare": lazy("lists", "CompareScreen"),
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(key, f"switch_mode('{mode}')", label, show=False, id=f"view-{mode}")
            for key, mode, label in VIEW_KEYS
        ),
        Binding("question_mark", "help", "Help", key_display="?", id="help"),
        Binding("E", "export", "Export", id="export"),
        Binding("R", "next_run", "Run", show=False, id="next-run"),
        Binding("q", "quit", "Quit", id="quit"),
    ]
    CSS = """
    #viewbar { height: 1; background: $panel; }
    #status { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(
        self,
        db_path: str | Path,
        run_id: str | None = None,
        baseline: str | None = None,
        *,
        author: str | None = None,
        notes_path: str | Path | None = None,
        export_dir: str | Path | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self.con = connect(db_path, read_only=True)
        self.runs = [r[0] for r in self.con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        if not self.runs:
            raise StoreError(f"{db_path}: no run loaded; load one with `ragtriage load --db {db_path} --run DIR`")
        for name, value in (("run", run_id), ("baseline", baseline)):
            if value is not None and value not in self.runs:
                raise StoreError(f"unknown {name} {value!r}; loaded runs: {', '.join(self.runs)}")
        newest = self.con.execute(
            "SELECT run_id FROM runs ORDER BY created_at DESC NULLS LAST, loaded_at DESC, run_id LIMIT 1"
        ).fetchone()
        self.run_id = run_id or (newest[0] if newest else self.runs[-1])
        self.baseline = baseline or next((r for r in self.runs if r != self.run_id), None)
        self.store = NotesStore(notes_path or notes_path_for(db_path))
        self.author = author or default_author()
        self.export_dir = Path(export_dir) if export_dir else Path.cwd()
        self.cache = RunCache()
        self.case_index: list[str] = []
        self._case_index_requested = False
        self.notes_version = 0
        self._notes_queue: queue.Queue[Any] = queue.Queue()
        self._writer_running = False
        super().__init__()

    # lifecycle -------------------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.sub_title = f"{self.db_path.name} · run {self.run_id}"
        self._writer_running = True
        self._notes_writer()
        self.switch_mode("overview")

    def on_unmount(self) -> None:
        self.drain_notes()

    def drain_notes(self) -> None:
        """Block until every queued note is committed, then stop the writer (idempotent)."""
        if self._writer_running:
            self._writer_running = False
            self._notes_queue.put(_STOP)
            self._notes_queue.join()

    async def action_quit(self) -> None:
        self.drain_notes()
        self.exit()

    def ensure_case_index(self) -> None:
        """Load every case id for the command palette, once, when the palette first opens: on 100k cases the
        query costs half a second that the overview's first paint should not share."""
        if not self._case_index_requested:
            self._case_index_requested = True
            self._load_case_index()

    @work(thread=True, exclusive=True, group="case-index", exit_on_error=False)
    def _load_case_index(self) -> None:
        cur = self.con.cursor()
        try:
            ids = cur.sql("SELECT case_id FROM cases ORDER BY case_id").to_arrow_table().column(0).to_pylist()
        finally:
            cur.close()
        self.call_from_thread(setattr, self, "case_index", ids)

    # notes -----------------------------------------------------------------------------------------------------
    @work(thread=True, group="notes", exit_on_error=False)
    def _notes_writer(self) -> None:
        worker = get_current_worker()
        while True:
            item = self._notes_queue.get()
            try:
                if item is _STOP or worker.is_cancelled:
                    return
                run_id, case_id, fields = item
                try:
                    note = self.store.set(run_id, case_id, author=self.author, **fields)
                except NotesError as exc:
                    self.post_message(NoteFailed(str(exc)))
                else:
                    self.post_message(NoteSaved(note))
            finally:
                self._notes_queue.task_done()

    def save_note(self, case_id: str, **fields: str) -> None:
        self._notes_queue.put((self.run_id, case_id, fields))

    def on_note_saved(self, message: NoteSaved) -> None:
        self.notes_version += 1
        n = message.note
        self.notify(f"saved {n.case_id}: {n.category or '-'} / {n.status or '-'}", timeout=2)
        handler = getattr(self.screen, "on_note_saved", None)
        if handler:
            handler()

    def on_note_failed(self, message: NoteFailed) -> None:
        self.notify(f"NOT saved: {message.error}", severity="error", timeout=10)

    def edit_note(self, case_id: str) -> None:
        self._open_editor(case_id, self.run_id)

    @work(thread=True, exclusive=True, group="note-read", exit_on_error=False)
    def _open_editor(self, case_id: str, run_id: str) -> None:
        from ragtriage.tui.screens.modals import NoteEditor

        note = self.store.get(run_id, case_id)
        text = note.note if note and note.note else ""

        def saved(value: str | None) -> None:
            if value is not None and value != text:
                self._notes_queue.put((run_id, case_id, {"note": value}))

        self.call_from_thread(self.push_screen, NoteEditor(case_id, text), saved)

    # navigation ------------------------------------------------------------------------------------------------
    def view_keys(self) -> tuple[tuple[str, str, str], ...]:
        return VIEW_KEYS

    def open_case(self, case_id: str, case_list: list[str]) -> None:
        from ragtriage.tui.screens.case_detail import CaseScreen

        self.push_screen(CaseScreen(case_id, case_list, self.current_mode or "failures"))

    def use_run(self, run_id: str) -> None:
        self.run_id = run_id
        if self.baseline == run_id:
            self.baseline = next((r for r in self.runs if r != run_id), None)
        self.sub_title = f"{self.db_path.name} · run {self.run_id}"
        while len(self.screen_stack) > 1:
            self.pop_screen()
        reload = getattr(self.screen, "reload", None)
        if reload:
            reload()
        self.notify(f"run {run_id}", timeout=2)

    def action_next_run(self) -> None:
        self.use_run(self.runs[(self.runs.index(self.run_id) + 1) % len(self.runs)])

    def action_help(self) -> None:
        from ragtriage.tui.screens.modals import HelpScreen

        seen: list[tuple[str, str]] = []
        for key, active in self.screen.active_bindings.items():
            b = active.binding
            if b.description:
                seen.append((b.key_display or self.get_key_display(b) or key, b.description))
        self.push_screen(HelpScreen(seen, type(self.screen).__name__.replace("Screen", "")))

    # export ----------------------------------------------------------------------------------------------------
    def action_export(self) -> None:
        from ragtriage.tui.screens.modals import PathPrompt

        default = str(self.export_dir / f"ragtriage-notes-{self.run_id}.csv")

        def chosen(path: str | None) -> None:
            if path:
                self._export(path, self.run_id)

        self.push_screen(
            PathPrompt(f"Export triage of run {self.run_id} to CSV (Enter, Escape cancels)", default), chosen
        )

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self, path: str, run_id: str) -> None:
        from ragtriage.notes.export import ExportError, export_table, write_csv

        cur = self.con.cursor()
        try:
            rows = write_csv(export_table(cur, self.store, run_id), path)
        except (ExportError, OSError) as exc:
            self.post_message(NoteFailed(f"export failed: {exc}"))
            return
        finally:
            cur.close()
        self.call_from_thread(self.notify, f"exported {rows} rows to {path}", timeout=5)
