"""Modal screens: the help list of the current view's keys, the note editor and the export path prompt."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static, TextArea

from ragtriage.tui.screens.base import VIEW_KEYS
from ragtriage.tui.triage_keys import KEY_HELP
from ragtriage.tui.widgets.footer import FittingFooter


class HelpScreen(ModalScreen[None]):
    """Every key of the view underneath, the view keys and the triage keys; any of ? Escape q closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 78; max-height: 22; border: round $accent; background: $surface; padding: 0 1; }
    """

    def __init__(self, keys: list[tuple[str, str]], title: str) -> None:
        super().__init__()
        self.keys = keys
        self.title_text = title

    def compose(self) -> ComposeResult:
        t = Table(box=None, show_header=False, pad_edge=False)
        t.add_column(style="bold", no_wrap=True)
        t.add_column()
        for key, desc in self.keys:
            t.add_row(Text(key), Text(desc))
        views = "  ".join(f"{k} {label}" for k, _, label in VIEW_KEYS)
        with Vertical():
            yield Label(Text(f"Keys: {self.title_text}", style="bold"))
            yield Static(t, markup=False)
            yield Static(
                Text(
                    f"\nViews: {views}\n{KEY_HELP}\n"
                    "j/k/g/G move, / search, t/T sort column, Enter open, Escape back,\n"
                    "ctrl+p command palette (commands, case ids), E export CSV, R next run, q quit"
                ),
                markup=False,
            )


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
            yield Label(Text(f"Note for {self.case_id}  (ctrl+s save, Escape cancel)"))
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
