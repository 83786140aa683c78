"""A table drawn as one line of text per row: columns sized from the data once, one flexible column.

Rich's Table measures every cell on every render, and Textual renders a Static more than once per update, which
makes moving between cases slow. Here each cell is
measured once and each row is one ``Text`` line (styles kept, never wrapped: the flexible column is cut with
an ellipsis, the others are as wide as their widest cell).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

from ragtriage.tui.text import middle

GAP = 2
MIN_FLEX = 8


@dataclass(frozen=True)
class Column:
    name: str
    right: bool = False
    flex: bool = False


class LineTable:
    """Columns with a bold header line; ``rows`` are ``Text`` cells, one list per row."""

    def __init__(self, columns: Sequence[Column], rows: Iterable[Sequence[Text]], *, middle_cut: bool = False) -> None:
        self.columns = list(columns)
        self.middle_cut = middle_cut  # ids differ at both ends: cut the flexible column in the middle
        self.rows = [list(r) for r in rows]
        self.natural = [
            max([cell_len(c.name), *(cell_len(r[i].plain) for r in self.rows)]) for i, c in enumerate(self.columns)
        ]

    def widths(self, available: int) -> list[int]:
        """Natural widths; the flexible column gives up what does not fit (down to MIN_FLEX) or takes the rest."""
        widths = list(self.natural)
        flex = next((i for i, c in enumerate(self.columns) if c.flex), None)
        if flex is not None:
            others = sum(w for i, w in enumerate(widths) if i != flex) + GAP * (len(widths) - 1)
            widths[flex] = max(MIN_FLEX, min(widths[flex], available - others))
        return widths

    def line(self, cells: Sequence[Text], widths: Sequence[int]) -> Text:
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        for i, (cell, width, col) in enumerate(zip(cells, widths, self.columns, strict=True)):
            if i:
                out.append(" " * GAP)
            cell = cell.copy()
            if cell_len(cell.plain) > width:
                if self.middle_cut and col.flex:
                    cell = Text(middle(cell.plain, width), style=cell.style)
                else:
                    cell.truncate(width, overflow="ellipsis")
            pad = " " * (width - cell_len(cell.plain))
            if col.right:
                out.append(pad)
                out.append_text(cell)
            else:
                out.append_text(cell)
                out.append(pad)
        out.rstrip()
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self.widths(options.max_width)
        lines = [self.line([Text(c.name, style="bold") for c in self.columns], widths)]
        lines += [self.line(r, widths) for r in self.rows]
        yield Text("\n", no_wrap=True, overflow="ellipsis").join(lines)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        full = sum(self.natural) + GAP * (len(self.natural) - 1)
        return Measurement(min(full, MIN_FLEX), min(full, options.max_width))
