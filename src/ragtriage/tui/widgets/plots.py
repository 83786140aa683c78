"""Pictures drawn with textual-plotext: the per-case distribution of a measure, per-slice bars, the Δ histogram.

Figures come from the core (metrics.per_case, metrics.slices, gate.compare); binning for the picture is the only
arithmetic here. Every label that came from data passes through the one sanitiser first, since plotext's
output is read back as ANSI text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from textual_plotext import PlotextPlot

from ragtriage.safe_text import visible

LABEL = 14
BINS = 20


def _label(value: object) -> str:
    text = visible(value)
    return text if len(text) <= LABEL else text[: LABEL - 1] + "…"


class Histogram(PlotextPlot):
    """Cases per bin of a measure in [0, 1] (ten bins of 0.1)."""

    def show(self, counts: Sequence[int], title: str) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        centers = [(i + 0.5) / len(counts) for i in range(len(counts))]
        plt.bar(centers, list(counts), marker="sd", width=0.9 / len(counts))
        plt.xlim(0.0, 1.0)
        plt.xticks([0.0, 0.25, 0.5, 0.75, 1.0])
        plt.yticks(integer_ticks(counts))
        plt.title(visible(title))
        self.refresh()


class SliceBars(PlotextPlot):
    """Mean of the slice measure per slice value, worst first (horizontal bars, value labels cut to fit)."""

    def show(self, labels: Sequence[object], means: Sequence[float], title: str) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        # plotext draws the first bar at the bottom: reversed, so the worst slice is on top as in the Slices view
        names = [_label(v) for v in labels][::-1]
        plt.bar(names, [round(float(m), 4) for m in means][::-1], orientation="horizontal", width=0.6)
        plt.xlim(0, 1)
        plt.title(visible(title))
        self.refresh()


class DeltaHistogram(PlotextPlot):
    """How many cases moved by how much: Δ of one measure per paired case, in 20 bins of 0.1 from -1 to 1 (a
    tie, Δ = 0, falls in the bin right of 0)."""

    def show(self, deltas: Sequence[float], title: str) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        counts = np.histogram(np.asarray(deltas, dtype=np.float64), bins=BINS, range=(-1.0, 1.0))[0].tolist()
        centers = [-1.0 + (i + 0.5) * 2 / BINS for i in range(BINS)]
        plt.bar(centers, counts, marker="sd", width=1.8 / BINS)
        plt.xlim(-1.0, 1.0)
        plt.xticks([-1.0, -0.5, 0.0, 0.5, 1.0])
        plt.yticks(integer_ticks(counts))
        plt.title(visible(title))
        self.refresh()


def integer_ticks(counts: Sequence[int]) -> list[float]:
    """A few whole-number ticks for a count axis (plotext would print 0.00, 0.50, ...)."""
    top = max(counts, default=0)
    step = max(1, -(-top // 4))
    return [float(t) for t in range(0, top + step, step)]
