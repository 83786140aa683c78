"""Shared behaviour of the views: filled by a thread worker, a title bar naming the views' keys, Escape goes back.

Workers run the core call on their own DuckDB cursor and *return*; ``on_worker_state_changed`` (UI thread) hands
the answer to ``show`` or the error to ``show_error``. ``exclusive`` cancels the previous load of the same view,
so a slow answer for an old selection never overwrites a newer one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from ragtriage.notes import CATEGORIES, STATUSES
from ragtriage.safe_text import visible
from ragtriage.tui.host import TriageHost, host
from ragtriage.tui.widgets.footer import FittingFooter

VIEW_KEYS = (
    ("o", "overview", "Overview"),
    ("s", "slices", "Slices"),
    ("z", "zerohit", "Zero-hit"),
    ("l", "leakage", "Leakage"),
    ("f", "failures", "Failures"),
    ("c", "compare", "Compare"),
)
LOAD_GROUP = "view-data"


def view_bar(current: str) -> Text:
    """The top line: each view with its key, the current one highlighted."""
    bar = Text(no_wrap=True, overflow="ellipsis")
    for key, mode, label in VIEW_KEYS:
        style = "bold reverse" if mode == current else "dim"
        bar.append(f" {key}", style="bold " + ("reverse" if mode == current else ""))
        bar.append(f" {label} ", style=style)
    return bar


class DataScreen(Screen[None]):
    """A view whose content comes from the core through one worker at a time."""

    MODE: ClassVar[str] = "overview"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("r", "reload", "Reload", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        #: The view the bar highlights (a case screen: the list it was opened from)
        self.view_mode = self.MODE

    _host: TriageHost | None = None

    @property
    def triage(self) -> TriageHost:
        """The app as :mod:`ragtriage.tui.host` describes it, checked once per screen (the protocol check reads
        every member, too slow to repeat on each use)."""
        if self._host is None:
            self._host = host(self.app)
        return self._host

    def compose_bar(self) -> ComposeResult:
        yield Static(view_bar(self.view_mode), id="viewbar")
        yield Static("loading…", id="status", markup=False)

    def compose_footer(self) -> ComposeResult:
        yield FittingFooter()

    def on_mount(self) -> None:
        self.reload()

    def on_screen_resume(self) -> None:
        if getattr(self, "_loaded_for", None) not in (None, self.stale_key()):
            self.reload()  # the run, baseline or notes changed while another view was on top
        else:
            self.set_bar()

    def stale_key(self) -> tuple[Any, ...]:
        """What the shown content depends on; views that show notes add the app's notes version."""
        return (self.triage.run_id, self.triage.baseline)

    _status: tuple[str, bool] = ("loading…", False)

    def set_bar(self) -> None:
        """Refresh the view bar and the context (run, case, filters) at the head of the status line."""
        self.query_one("#viewbar", Static).update(view_bar(self.view_mode))
        self.set_status(*self._status)

    def bar_detail(self) -> str:
        return f"run {self.triage.run_id}"

    def set_status(self, text: str, error: bool = False) -> None:
        self._status = (text, error)
        line = Text(no_wrap=True, overflow="ellipsis")
        # run ids, case ids and slice values reach these strings from data: never a control byte to the terminal
        line.append(visible(self.bar_detail()), style="bold")
        if text:
            line.append(" │ ")
            line.append(visible(text), style="bold red" if error else "")
        self.query_one("#status", Static).update(line)

    def reload(self) -> None:
        self._loaded_for = self.stale_key()
        self.set_bar()
        self.load(self.fetch)

    def action_reload(self) -> None:
        self.reload()

    def fetch(self, cur: Any) -> Any:
        """Runs in the worker thread with its own cursor; return what ``show`` needs. Touch no widget here."""
        raise NotImplementedError

    def show(self, result: Any) -> None:
        raise NotImplementedError

    def show_error(self, message: str) -> None:
        self.set_status(message, error=True)

    @work(thread=True, exclusive=True, group=LOAD_GROUP, exit_on_error=False)
    def load(self, fn: Callable[[Any], Any]) -> Any:
        with self.triage.reader.cursor() as cur:
            return fn(cur)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != LOAD_GROUP or event.worker.node is not self:
            return
        if event.state == WorkerState.SUCCESS:
            self.show(event.worker.result)
        elif event.state == WorkerState.ERROR:
            err = event.worker.error
            self.show_error(str(err) if err is not None and err.args else f"{type(err).__name__}: {err}")

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        elif self.MODE != "overview":
            self.app.switch_mode("overview")


#: j/k scroll a body of sections by a line, g/G to its top and bottom (arrows and PgUp/PgDn are the body's own)
SCROLL_BINDINGS: list[BindingType] = [
    Binding("j", "scroll(1)", "Down", show=False),
    Binding("k", "scroll(-1)", "Up", show=False),
    Binding("g", "scroll_to(0)", "Top", show=False),
    Binding("G", "scroll_to(-1)", "Bottom", show=False),
]


class SectionsScreen(DataScreen):
    """A view of named sections, one Static each (``#sec-<name>``, in ``SHOWN`` order), in a scrolling body: the
    overview and the case screen."""

    SHOWN: ClassVar[tuple[str, ...]] = ()

    def compose(self) -> ComposeResult:
        yield from self.compose_bar()
        with VerticalScroll(id="body"):
            for name in self.SHOWN:
                yield Static(id=f"sec-{name}", classes="section", markup=False)
        yield from self.compose_footer()

    def action_scroll(self, lines: int) -> None:
        # immediate: a deferred scroll starts from the old position, so a burst of keys would move one line
        self.query_one("#body", VerticalScroll).scroll_relative(y=lines, animate=False, immediate=True)

    def action_scroll_to(self, where: int) -> None:
        body = self.query_one("#body", VerticalScroll)
        body.scroll_end(animate=False) if where < 0 else body.scroll_home(animate=False)


CATEGORY_KEYS = dict(zip("1234", CATEGORIES, strict=True))
STATUS_KEYS = dict(zip("5678", STATUSES, strict=True))

TRIAGE_BINDINGS: list[BindingType] = [
    *(
        Binding(
            k,
            f"set_category('{c}')",
            "category" if k == "1" else c,
            key_display="1-4" if k == "1" else k,
            show=k == "1",
        )
        for k, c in CATEGORY_KEYS.items()
    ),
    Binding("0", "set_category('')", "clear category", show=False),
    *(
        Binding(
            k, f"set_status('{s}')", "status" if k == "5" else s, key_display="5-8" if k == "5" else k, show=k == "5"
        )
        for k, s in STATUS_KEYS.items()
    ),
    Binding("e", "edit_note", "Note"),
]

KEY_HELP = (
    "1 dataset  2 ingestion  3 ranking  4 security  0 clear category\n"
    "5 open  6 confirmed  7 fixed  8 wont-fix\n"
    "e edit note (ctrl+s saves, Escape cancels)"
)


class TriageKeys(DataScreen):
    """A view that knows which case is current (``triage_case``): the Failures list, the case screen.

    Single-key triage: category, status, note. Each key queues one change to the app's notes writer, which saves
    it at once (durable when the footer message says "saved"). Digits keep every key one stroke on any keyboard
    layout over SSH."""

    TRIAGE: ClassVar[list[BindingType]] = TRIAGE_BINDINGS

    def triage_case(self) -> str | None:
        raise NotImplementedError

    def target_case(self) -> str | None:
        """The current case, or None with a word on screen: a triage key is never silently lost."""
        case_id = self.triage_case()
        if not case_id:
            self.notify(
                "no case selected yet (the list is still loading): nothing saved",
                severity="warning",
                timeout=3,
            )
        return case_id

    def action_set_category(self, category: str) -> None:
        case_id = self.target_case()
        if case_id:
            self.triage.save_note(case_id, category=category)

    def action_set_status(self, status: str) -> None:
        case_id = self.target_case()
        if case_id:
            self.triage.save_note(case_id, status=status)

    def action_edit_note(self) -> None:
        case_id = self.target_case()
        if case_id:
            self.triage.edit_note(case_id)
