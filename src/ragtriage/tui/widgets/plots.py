"""The pictures: the per-case distribution of a measure and the Δ histogram (textual-plotext), the per-slice bars
(one text line per slice).

Figures come from the core (metrics.per_case, metrics.slices, gate.compare); binning for the picture is the only
arithmetic here. Every label that came from data passes through the one sanitiser first, since plotext's
output is read back as ANSI text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.cells import cell_len
from rich.console import RenderableType
from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget
from textual_plotext import PlotextPlot

from ragtriage.safe_text import visible

LABEL = 14
BINS = 20


def _label(value: object) -> str:
    text = visible(value)
    return text if len(text) <= LABEL else text[: LABEL - 1] + "…"


class Histogram(PlotextPlot):
    """Cases per bin of a measure over ``RANGE``, the counts given (ten bins of 0.1 in [0, 1])."""

    RANGE = (0.0, 1.0)

    def show(self, counts: Sequence[int], title: str) -> None:
        lo, hi = self.RANGE
        step = (hi - lo) / len(counts)
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.bar([lo + (i + 0.5) * step for i in range(len(counts))], list(counts), marker="sd", width=0.9 * step)
        plt.xlim(lo, hi)
        plt.xticks([lo + (hi - lo) * t / 4 for t in range(5)])
        plt.yticks(integer_ticks(counts))
        plt.title(visible(title))
        self.refresh()


class SliceBars(Widget):
    """Mean of the slice measure per slice value, worst first: one line per slice, its label, a bar from 0 to 1 and
    the value printed at the bar's end, so a label can never sit beside another slice's bar (plotext spreads
    horizontal bars over the plot's rows, which need not fall one to a label)."""

    DEFAULT_CSS = """
    SliceBars { height: auto; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: What is drawn, one (label, mean) per line in order: the labels as shown (sanitised, cut)
        self.rows: list[tuple[str, float | None]] = []

    def show(self, labels: Sequence[object], means: Sequence[float | None], title: str = "") -> None:
        self.rows = [(_label(v), None if m is None or m != m else float(m)) for v, m in zip(labels, means, strict=True)]
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self.rows))

    def render(self) -> RenderableType:
        return Text("\n").join(bar_lines(self.rows, self.size.width or 80))


def bar_lines(rows: Sequence[tuple[str, float | None]], width: int) -> list[Text]:
    """``label  ████████▌  0.6867`` per row: labels padded to the longest, bars scaled to [0, 1] over the width
    left, a value outside [0, 1] drawn at the edge it passes (the number says what it is)."""
    label_w = max((cell_len(label) for label, _ in rows), default=0)
    value_w = 7
    room = max(4, width - label_w - value_w - 3)
    lines = []
    for label, mean in rows:
        line = Text(no_wrap=True, overflow="crop")
        line.append(label + " " * (label_w - cell_len(label)) + " ")
        if mean is None:
            line.append(" " * room + "      —")
        else:
            eighths = round(min(max(mean, 0.0), 1.0) * room * 8)
            bar = "█" * (eighths // 8) + (EIGHTHS[eighths % 8] if eighths % 8 else "")
            line.append(bar, style="bold blue")
            line.append(" " * (room - cell_len(bar)))
            line.append(f" {mean:.4f}".rjust(value_w), style="bold")
        lines.append(line)
    return lines


EIGHTHS = " ▏▎▍▌▋▊▉"


class DeltaHistogram(Histogram):
    """How many cases moved by how much: Δ of one measure per paired case, in 20 bins of 0.1 from -1 to 1 (a
    tie, Δ = 0, falls in the bin right of 0)."""

    RANGE = (-1.0, 1.0)

    def show(self, deltas: Sequence[float], title: str) -> None:
        counts = np.histogram(np.asarray(deltas, dtype=np.float64), bins=BINS, range=self.RANGE)[0].tolist()
        super().show(counts, title)


def integer_ticks(counts: Sequence[int]) -> list[float]:
    """A few whole-number ticks for a count axis (plotext would print 0.00, 0.50, ...)."""
    top = max(counts, default=0)
    step = max(1, -(-top // 4))
    return [float(t) for t in range(0, top + step, step)]
