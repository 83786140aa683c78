"""What the app shows while `ragtriage tui --qrels --run` loads the files into its cached store: the step under way
and the seconds so far. The load runs on a worker thread (DuckDB releases the GIL), so the app's own start-up is
done by the time the store is, and the Overview follows at once; `q` quits (the load stops at its next step)."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from ragtriage.safe_text import visible
from ragtriage.tui.widgets.footer import FittingFooter


class BuildingScreen(Screen[None]):
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
