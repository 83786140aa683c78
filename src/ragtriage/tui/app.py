"""The triage app: one mode per top-level view, a read-only DuckDB connection, and one ordered notes writer.

- The store is read through short-lived read-only connections (:class:`ragtriage.app.browse.reads.StoreReader`), one
  per worker call, so several people, CLI reports and a `ragtriage load` can use one database while it is open.
- Notes written by another process (a second triager) show within a second: the app polls the notes file's
  SQLite ``data_version`` (a cheap pragma) and reloads the view when it changes.
- Runs loaded by another process while the app is open join its run list within a few seconds, and a
  notification names them and the keys that use them (`R` next run, `c` Compare).
- Each run whose classification is not stored (a load leaves it to the app) is classified in the background, a
  chunk of cases at a time, each chunk committed (``classify.chunked``): the Overview and the metric views come
  first, Failures fills in with a progress line, and a case opened before its chunk is classified on the spot.
  While it writes, the app's reads share its connection (``StoreReader.writing``), so other processes wait for the
  store (``--wait``) or are told who holds it; quitting stops it between chunks, and the next opening continues.
- Notes go through one queue to one writer worker, so two quick keys on one case are stored in the order
  pressed; the footer says "saved" only once SQLite has committed the change. Quitting drains the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import duckdb
from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.worker import get_current_worker

from ragtriage.app.browse import case as browse_case
from ragtriage.app.browse import state as browse_state
from ragtriage.app.browse.lists import summary_per_case
from ragtriage.app.browse.reads import CLASSIFIED_KINDS, RunCache, StoreReader
from ragtriage.app.browse.state import NotesWatch, StoreState, store_state
from ragtriage.classify import Progress, classify_chunks
from ragtriage.notes import Note, NotesError, NotesStore, default_author, notes_path_for
from ragtriage.output_paths import name_part
from ragtriage.safe_text import visible
from ragtriage.store import StoreError, StoreLocked, run_ids
from ragtriage.store.memory_cap import capped
from ragtriage.tui.commands import TriageCommands
from ragtriage.tui.host import TriageHost
from ragtriage.tui.screens.base import VIEW_KEYS
from ragtriage.tui.screens.overview import OverviewScreen

if TYPE_CHECKING:
    from ragtriage.tui.case_layout import Rendered

_STOP = object()


class BuildStopped(Exception):
    """The app quit while its store was being written: the load stops at its next step."""


class Build(Protocol):
    """What writes the store before the views open: called with a progress callback (a step's name); ``what``
    names the inputs for the progress screen."""

    @property
    def what(self) -> str: ...

    def __call__(self, progress: Callable[[str], None]) -> object: ...


NOTES_POLL_S = 1.0
CLASSIFY_RETRY_S = 5.0  # another process holds the store: try again then
RUNS_POLL_S = 3.0  # a short read-only open: a load starting in that moment waits or says the store is busy


def _view(mode: str) -> Screen[Any]:
    """Views other than the overview are imported on first use, not before the overview's first paint."""
    from ragtriage.tui.screens import failures, lists

    views = {
        "slices": lists.SlicesScreen,
        "zerohit": lists.ZeroHitScreen,
        "leakage": lists.LeakageScreen,
        "failures": failures.FailuresScreen,
        "compare": lists.CompareScreen,
    }
    return views[mode]()


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
        **{mode: partial(_view, mode) for _, mode, _ in VIEW_KEYS if mode != "overview"},
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"show_view('{mode}')", label, show=False, id=f"view-{mode}") for key, mode, label in VIEW_KEYS),
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
        build: Build | None = None,
        k: int | None = None,
    ) -> None:
        """``build``: the store is written by it first (``tui --qrels --run``), on a worker while the app starts and
        shows its progress; the views open when it returns. Its error ends the app (:attr:`build_error`). ``k``:
        the cutoff every view reads (``tui --k``; default the run's own)."""
        self.db_path = Path(db_path)
        self.reader = StoreReader(db_path)
        self._build, self._wanted = build, (run_id, baseline)
        #: What stopped ``build`` (the caller reports it once the terminal is restored)
        self.build_error: BaseException | None = None
        self.runs: list[str] = []
        self.run_id: str = ""
        self.baseline: str | None = None
        #: Runs whose classification this app stores in the background, and how far each is
        self.classifying: dict[str, Progress] = {}
        if build is None:
            self._apply(store_state(self.db_path, run_id, baseline))
        #: The runs Compare listed (open run, baseline, the rest): a case opened from it shows their lists
        self.compare_runs: tuple[str, ...] = ()
        self.last_case: str | None = None
        self.store = NotesStore(notes_path or notes_path_for(db_path))
        self.author = author or default_author()
        self.export_dir = Path(export_dir) if export_dir else Path.cwd()
        self.cache = RunCache(k)
        self.case_index: list[str] = []
        self._case_index_requested = False
        self.notes_version = 0
        self.early_case: tuple[tuple[Any, ...], Future[Rendered]] | None = None  # see prefetch_case
        self._notes_queue: queue.Queue[Any] = queue.Queue()
        self._writer_running = False
        super().__init__()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification is plain text with controls made visible: they quote case ids, run ids, paths and
        core messages, all data (``markup`` is accepted for Textual's signature and ignored)."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def _apply(self, state: StoreState) -> None:
        self.runs, self.run_id, self.baseline, self.classifying = state

    # lifecycle -------------------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        # SIGTERM winds the app down as quitting does (notes saved, terminal restored, the caller's clean-up run)
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # no signals here (Windows, a thread)
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.exit, None, 128 + signal.SIGTERM)
        self._writer_running = True
        self._notes_writer()
        if self._build is not None:
            from ragtriage.tui.screens.modals import BuildingScreen

            self.push_screen(BuildingScreen(self._build.what))
            self._build_store(self._build)
            return
        self._open_views()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the store is being written only quitting works: every view reads it."""
        return action == "quit" if self._build is not None else True

    @work(thread=True, exclusive=True, group="build", exit_on_error=False)
    def _build_store(self, build: Build) -> None:
        worker = get_current_worker()

        def step(name: str) -> None:
            if worker.is_cancelled:  # the app is quitting: the load stops here, leaving no store behind
                raise BuildStopped(name)
            self.call_from_thread(self._build_step, name)

        try:
            build(step)
            state = store_state(self.db_path, *self._wanted)
        except BaseException as exc:  # reported by the caller once the terminal is restored
            if not worker.is_cancelled:
                self.call_from_thread(self._build_failed, exc)
            return
        self.call_from_thread(self._built, state)
        # the metric table's per-case values, computed here while the UI thread lays the Overview out (its worker
        # waits for this instead of computing them again); an error is the Overview's to report
        with contextlib.suppress(Exception), self.reader.cursor() as cur:
            summary_per_case(cur, state.run_id, self.cache)

    def _build_step(self, name: str) -> None:
        from ragtriage.tui.screens.modals import BuildingScreen

        if isinstance(self.screen, BuildingScreen):
            self.screen.set_step(name)

    def _build_failed(self, exc: BaseException) -> None:
        self.build_error = exc
        self.exit(return_code=2)

    def _built(self, state: StoreState) -> None:
        self._apply(state)
        self._build = None
        self.pop_screen()
        self._open_views()

    def _open_views(self) -> None:
        self.sub_title = visible(f"{self.db_path.name} · run {self.run_id}")
        self.switch_mode("overview")
        self._notes_watch = NotesWatch(self.store.path)
        self.set_interval(NOTES_POLL_S, self._poll_notes)
        self.set_interval(RUNS_POLL_S, self._poll_runs)

    # background classification ---------------------------------------------------------------------------------
    def classification_state(self, run_id: str) -> Progress | None:
        """How far the app's background classification of ``run_id`` is; None when the app is not classifying it
        (stored already, or the store cannot be written: readers then classify what they read)."""
        return self.classifying.get(run_id)

    _classify_con: duckdb.DuckDBPyConnection | None = None
    _classify_started = False

    def start_classifying(self) -> None:
        """Start the background classification once (the Overview asks when its metric table is on screen: what a
        person reads first is read before it)."""
        if self.classifying and not self._classify_started:
            self._classify_started = True
            self._classify_in_background()

    @work(thread=True, exclusive=True, group="classify", exit_on_error=False)
    def _classify_in_background(self) -> None:
        """Store the classification of every run not classified yet, the open run first, a chunk at a time."""
        worker = get_current_worker()
        order = sorted(self.classifying, key=lambda r: (r != self.run_id, r != self.baseline, r))
        try:
            for rid in order:  # the store is let go between runs: another process's load or command gets a turn
                with self.reader.writing() as con, capped(con):
                    self._classify_con = con
                    done = classify_chunks(
                        con,
                        rid,
                        stop=lambda: worker.is_cancelled,
                        on_chunk=lambda p: self.call_from_thread(self._classified_chunk, p),
                    )
                if not done.complete:
                    return
                self.call_from_thread(self._classified_chunk, done)
        except StoreLocked as exc:
            if not worker.is_cancelled:
                self.call_from_thread(self._classify_later, str(exc))
        except (StoreError, duckdb.Error, OSError) as exc:
            if not worker.is_cancelled:
                self.call_from_thread(self._classify_refused, str(exc))
        finally:
            self._classify_con = None

    def _classified_chunk(self, p: Progress) -> None:
        if p.complete:
            self.classifying.pop(p.run_id, None)
            self.cache.forget(p.run_id, CLASSIFIED_KINDS)
        else:
            self.classifying[p.run_id] = p
        self._tell_screen("on_classified", p)

    _classify_waits = False

    def _classify_later(self, why: str) -> None:
        if not self._classify_waits:  # said once; it tries again quietly until the store is free
            self._classify_waits = True
            self.notify(f"classification waits for the store: {why}", timeout=6)
        self.set_timer(CLASSIFY_RETRY_S, self._classify_in_background)

    def _classify_refused(self, why: str) -> None:
        """The store cannot be written: the views classify what they read themselves, as whole runs."""
        self.classifying.clear()
        self.notify(f"classification not stored ({why}); each view classifies what it shows", timeout=8)
        self._tell_screen("on_classified", None)

    def _tell_screen(self, name: str, *args: Any) -> None:
        """Call the shown screen's handler ``name``, if it has one, unless that screen is still being composed:
        its own mount reads the app's newest state, and its widgets do not exist yet."""
        screen = self.screen
        hook: Callable[..., Any] | None = getattr(screen, name, None) if screen.is_mounted else None
        if hook:
            hook(*args)

    def _poll_notes(self) -> None:
        """Another process saved a note: refresh what shows notes (our own saves refresh on NoteSaved too)."""
        if self._notes_watch.changed():
            self.notes_version += 1
            self._tell_screen("on_note_saved")

    @work(thread=True, exclusive=True, group="runs-watch", exit_on_error=False)
    def _poll_runs(self) -> None:
        """Runs another process loaded since the app opened (a store being written is skipped until free)."""
        try:
            with self.reader.cursor() as cur:
                loaded = run_ids(cur)
        except (StoreError, duckdb.Error):
            return
        new = [r for r in loaded if r not in self.runs]
        if new:
            self.call_from_thread(self._runs_landed, new)

    def _runs_landed(self, new: list[str]) -> None:
        self.runs = sorted({*self.runs, *new})
        self.notify(f"new run(s) loaded: {', '.join(new)}. R switches runs; c compares them.", timeout=8)

    def on_unmount(self) -> None:
        con = self._classify_con
        if con is not None:  # the chunk under way is rolled back; the chunks done stay stored
            with contextlib.suppress(duckdb.Error):
                con.interrupt()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
        self.drain_notes()
        watch = getattr(self, "_notes_watch", None)
        if watch is not None:
            watch.close()

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
        """Load every case id for the command palette, once, when the palette first opens: on many cases the
        query is a wait that the overview's first paint should not share."""
        if not self._case_index_requested:
            self._case_index_requested = True
            self._load_case_index()

    @work(thread=True, exclusive=True, group="case-index", exit_on_error=False)
    def _load_case_index(self) -> None:
        with self.reader.cursor() as cur:
            ids = browse_state.case_index(cur)
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
        self._tell_screen("on_note_saved")

    def on_note_failed(self, message: NoteFailed) -> None:
        self.notify(f"NOT saved: {message.error}", severity="error", timeout=10)

    def edit_note(self, case_id: str) -> None:
        self._open_editor(case_id, self.run_id)

    @work(thread=True, exclusive=True, group="note-read", exit_on_error=False)
    def _open_editor(self, case_id: str, run_id: str) -> None:
        from ragtriage.tui.screens.modals import NoteEditor

        note = self.store.get(run_id, case_id)
        # the editor draws its text as it is: controls made visible first (a note holding ESC[2J would clear the
        # screen); saved only when changed, so opening and closing a note never rewrites it
        text = visible(note.note, keep_newlines=True) if note and note.note else ""

        def saved(value: str | None) -> None:
            if value is not None and value != text:
                self._notes_queue.put((run_id, case_id, {"note": value}))

        self.call_from_thread(self.push_screen, NoteEditor(case_id, text), saved)

    # navigation ------------------------------------------------------------------------------------------------
    def view_keys(self) -> tuple[tuple[str, str, str], ...]:
        return VIEW_KEYS

    def open_case(self, case_id: str, case_list: Sequence[str], pos: int | None = None) -> None:
        """The case screen on top of the list it came from (one case screen at a time: opening another from the
        palette replaces it, so Escape always goes back to the list). ``pos``: where the case is in the list
        (the cursor row), so no search runs over it."""
        from ragtriage.tui.screens.case_detail import CaseScreen

        if isinstance(self.screen, CaseScreen):
            self.pop_screen()
        self.last_case = case_id
        self.prefetch_case(case_id)  # a no-op when the list's highlight already started this read
        self.push_screen(CaseScreen(case_id, case_list, self.current_mode or "failures", pos))

    def prefetch_case(self, case_id: str) -> None:
        """Start reading ``case_id``'s detail on the early-read thread (:func:`case_detail_soon`), unless that read
        is already started: lists call it for the row the cursor rests on, so Enter finds the read done or under
        way, and :meth:`open_case` calls it for the case it opens. A read started for another case is cancelled
        when it has not begun (one that runs finishes unread: the thread takes one read at a time)."""
        from ragtriage.tui.case_layout import body_width, rendered

        started = self._early_for(case_id)
        failed = started is not None and started.done() and not started.cancelled() and started.exception() is not None
        if started is not None and not failed:  # a failed read (a store busy then) is tried again
            return
        if self.early_case is not None:
            self.early_case[1].cancel()
        self.early_case = (
            self._early_key(case_id),
            browse_case.case_detail_soon(
                self.reader,
                self.run_id,
                case_id,
                self.store,
                self.cache,
                self.baseline,
                partial(rendered, width=body_width(self.size.width)),
            ),
        )

    def take_early_case(self, case_id: str) -> Future[Rendered] | None:
        """The read :meth:`prefetch_case` started for ``case_id``, once; None when it was started for another case,
        run or baseline, or before a note changed (the notes version is part of its key)."""
        early = self._early_for(case_id)
        self.early_case = None
        return early

    def early_case_ready(self, case_id: str, width: int) -> Rendered | None:
        """The read :meth:`prefetch_case` started for ``case_id`` if it has finished without error and laid the
        case out at ``width``, taken once; None otherwise, leaving the read to :meth:`take_early_case` (a read
        still running, or one to lay out again at another width without reading the case again). A case screen
        that finds it at mount shows the case in its first layout, with no worker and no connection opened."""
        read = self._early_for(case_id)
        if read is None or not read.done() or read.cancelled() or read.exception() is not None:
            return None
        if read.result().width != width:
            return None
        self.early_case = None
        return read.result()

    def _early_for(self, case_id: str) -> Future[Rendered] | None:
        """The read :meth:`prefetch_case` started, if it was started for ``case_id`` as things are now (left in
        place)."""
        early = self.early_case
        return early[1] if early is not None and early[0] == self._early_key(case_id) else None

    def _early_key(self, case_id: str) -> tuple[Any, ...]:
        """What an early read of a case depends on: the run, the baseline, the notes version and the case."""
        return (self.run_id, self.baseline, self.notes_version, case_id)

    def show_view(self, mode: str) -> None:
        """Switch to a top-level view from anywhere (palette, keys): what was stacked on the current view is
        closed first, so views never pile up."""
        while len(self.screen_stack) > 1 and not isinstance(self.screen, ModalScreen):
            self.pop_screen()
        self.switch_mode(mode)

    def action_show_view(self, mode: str) -> None:
        self.show_view(mode)

    def use_run(self, run_id: str) -> None:
        self.run_id = run_id
        if self.baseline == run_id:
            self.baseline = next((r for r in self.runs if r != run_id), None)
        self.sub_title = visible(f"{self.db_path.name} · run {self.run_id}")
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self._tell_screen("reload")
        self.notify(f"run {run_id}", timeout=2)

    def action_next_run(self) -> None:
        self.use_run(self.runs[(self.runs.index(self.run_id) + 1) % len(self.runs)])

    def action_help(self) -> None:
        from ragtriage.tui.screens.modals import HelpScreen, screen_keys

        screen = self.screen
        self.push_screen(HelpScreen(screen_keys(screen, self), type(screen).__name__.replace("Screen", "")))

    # export ----------------------------------------------------------------------------------------------------
    def action_export(self) -> None:
        from ragtriage.tui.screens.modals import PathPrompt

        default = str(self.export_dir / f"ragtriage-notes-{name_part(self.run_id)}.csv")

        def chosen(path: str | None) -> None:
            if not path:
                return
            if Path(path).exists():
                self.confirm_overwrite(path)
            else:
                self._export(path, self.run_id)

        self.push_screen(
            PathPrompt(f"Export triage of run {visible(self.run_id)} to CSV (Enter, Escape cancels)", default), chosen
        )

    def confirm_overwrite(self, path: str) -> None:
        from ragtriage.tui.screens.modals import Confirm

        def answered(yes: bool | None) -> None:
            if yes:
                self._export(path, self.run_id)
            else:
                self.notify("export cancelled: nothing written", timeout=3)

        self.push_screen(Confirm(f"{visible(path)} exists. Overwrite it? (y / n)"), answered)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self, path: str, run_id: str) -> None:
        from ragtriage.notes.export import ExportError, export_table, write_csv

        try:
            with self.reader.cursor() as cur:
                rows = write_csv(export_table(cur, self.store, run_id), path)
        except (ExportError, OSError, StoreError) as exc:
            self.post_message(NoteFailed(f"export failed: {visible(exc)}"))
            return
        self.call_from_thread(self.notify, f"exported {rows} rows to {visible(path)}", timeout=5)


def as_host(app: TriageApp) -> TriageHost:
    """Type-checks that the app provides what screens reach it through (:mod:`ragtriage.tui.host`)."""
    return app
