"""Screens over or before the views: the help (every key of the view underneath and of the app, scrollable), the
note editor, the export path prompt, the overwrite question, the measure picker, and the progress of a store
being built."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Label, OptionList, Static, TextArea

from ragtriage.safe_text import visible
from ragtriage.tui.screens.base import KEY_HELP
from ragtriage.tui.widgets.footer import FittingFooter

if TYPE_CHECKING:
    from textual.app import App

GENERAL_KEYS = (
    ("j k ↓ ↑", "move (lists) / scroll (overview, case)"),
    ("g G Home End", "first / last"),
    ("ctrl+f ctrl+b PgDn PgUp", "page"),
    ("/", "search ids (case, unit) and query text; Escape clears"),
    ("t T", "sort by the next column / reverse (ids sort naturally: q2 before q10)"),
    ("Enter", "open the case (Slices: the slice's failing cases)"),
    ("n p", "case screen: next / previous case of the list it came from"),
    ("Escape", "back (closes search, the case screen, then goes to Overview)"),
    ("ctrl+p", "command palette: views, runs, export, every case id"),
)


def screen_keys(screen: Screen[Any], app: App[Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(keys of the screen, keys of the app), each as (keys as shown, what they do), from the live bindings of
    the screen and the app (not the focused widget's scrolling keys, which "Moving around" lists); keys bound to
    one action are one row."""
    rows: dict[tuple[bool, str], list[str]] = {}
    for key, active in screen.active_bindings.items():
        b = active.binding
        if active.node not in (screen, app) or not b.description:
            continue
        shown = b.key_display or app.get_key_display(b) or key
        keys = rows.setdefault((active.node is app, b.action), [])
        if shown not in keys:
            keys.append(shown)
    described = {
        (active.node is app, active.binding.action): active.binding for active in screen.active_bindings.values()
    }
    view = [(" ".join(keys), described[k].description) for k, keys in rows.items() if not k[0]]
    whole = [(" ".join(keys), described[k].description) for k, keys in rows.items() if k[0]]
    return view, whole


def key_table(rows: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> Table:
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    for key, desc in rows:
        t.add_row(Text(key), Text(desc))
    return t


class HelpScreen(ModalScreen[None]):
    """Every key of the view underneath, then the app's; scrolls with j/k/arrows/PgUp/PgDn; ? Escape q close."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close"),
        Binding("j,down", "scroll(1)", "Down", show=False),
        Binding("k,up", "scroll(-1)", "Up", show=False),
        Binding("pagedown,ctrl+f,space", "scroll(10)", "Page down", show=False),
        Binding("pageup,ctrl+b", "scroll(-10)", "Page up", show=False),
        Binding("g,home", "scroll(-100000)", "Top", show=False),
        Binding("G,end", "scroll(100000)", "Bottom", show=False),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 78; max-width: 100%; height: 90%; border: round $accent;
                                   background: $surface; padding: 0 1; }
    """

    def __init__(self, keys: tuple[list[tuple[str, str]], list[tuple[str, str]]], title: str) -> None:
        super().__init__()
        self.view_keys, self.app_keys = keys
        self.title_text = title

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "Help (j/k scroll, Escape closes)"
            yield Label(Text(f"Keys of this view: {self.title_text}", style="bold underline"))
            yield Static(key_table(self.view_keys), markup=False)
            yield Label(Text("\nKeys everywhere", style="bold underline"))
            yield Static(key_table(self.app_keys), markup=False)
            yield Label(Text("\nMoving around", style="bold underline"))
            yield Static(key_table(GENERAL_KEYS), markup=False)
            yield Label(Text("\nTriage (every list of cases and the case screen)", style="bold underline"))
            yield Static(Text(KEY_HELP), markup=False)

    def action_scroll(self, lines: int) -> None:
        self.query_one("#help-body", VerticalScroll).scroll_relative(y=lines, animate=False, immediate=True)


class NoteEditor(ModalScreen[str | None]):
    """Multi-line note; ctrl+s saves (the note is stored at once), Escape leaves it unchanged."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]
    DEFAULT_CSS = """
    NoteEditor { align: center middle; }
    NoteEditor > Vertical { width: 76; height: 16; border: round $accent; background: $surface; }
    NoteEditor TextArea { height: 1fr; }
    """

    def __init__(self, case_id: str, text: str) -> None:
        super().__init__()
        self.case_id = case_id
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Note for {visible(self.case_id)}  (ctrl+s save, Escape cancel)"))
            yield TextArea(self.text, id="note", soft_wrap=True, show_line_numbers=False)
            yield FittingFooter()

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PathPrompt(ModalScreen[str | None]):
    """One-line prompt (the export file name); Enter accepts, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    PathPrompt { align: center middle; }
    PathPrompt > Vertical { width: 76; height: 5; border: round $accent; background: $surface; }
    """

    def __init__(self, title: str, value: str) -> None:
        super().__init__()
        self.title_text = title
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.title_text))
            yield Input(self.value, id="path")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Pick(ModalScreen[str | None]):
    """One of a few names (the measure of a view): the current one is highlighted at the start, Enter picks the
    highlighted one, Escape keeps the current one (dismisses None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    Pick { align: center middle; }
    Pick > OptionList { width: 40; height: auto; max-height: 14; border: round $accent; background: $surface; }
    """

    def __init__(self, title: str, names: tuple[str, ...] | list[str], current: str) -> None:
        super().__init__()
        self.title_text = title
        self.names = list(names)
        self.current = current

    def compose(self) -> ComposeResult:
        options = OptionList(*(Text(n) for n in self.names))
        options.border_title = self.title_text
        yield options

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.names.index(self.current) if self.current in self.names else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.names[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A yes/no question (overwrite an existing export): y answers yes; n or Escape no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical { width: 76; height: 5; border: round $warning; background: $surface; padding: 0 1; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.question, style="bold"))
            yield FittingFooter()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class BuildingScreen(Screen[None]):
    """What the app shows while `ragtriage tui --qrels --run` loads the files into its cached store: the step under
    way and the seconds so far. The load runs on a worker thread (DuckDB releases the GIL), so the app's own
    start-up is done by the time the store is, and the Overview follows at once; `q` quits (the load stops at its
    next step)."""

    DEFAULT_CSS = """
    BuildingScreen #building { height: 1fr; padding: 1 2; }
    """
    REFRESH_S = 0.5

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.step = "starting"
        self.started = time.monotonic()

    def compose(self) -> ComposeResult:
        yield Static(self.line(), id="building", markup=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.set_interval(self.REFRESH_S, self.show)

    def line(self) -> Text:
        seconds = time.monotonic() - self.started
        text = Text(visible(f"loading {self.what} into a cached store"), style="bold")
        text.append("\n")
        text.append(visible(f"{self.step} · {seconds:.0f} s"), style="dim")
        text.append("\n\nThe Overview opens when it is written; the next opening reads it at once.")
        return text

    def show(self) -> None:
        self.query_one("#building", Static).update(self.line())

    def set_step(self, step: str) -> None:
        self.step = step
        self.show()
