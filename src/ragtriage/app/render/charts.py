"""The report's plots as inline SVG, drawn with matplotlib (the optional ``report`` extra).

Three views of the first measure: each run's per-case distribution, each run's per-case difference from the
baseline sorted (how many cases gain, how many lose and by how much), and a slice x run heatmap of the mean
difference. matplotlib's object API (``Figure``, no pyplot) keeps it free of any GUI backend. Labels are made
visible with ``ragtriage.safe_text.visible`` and mathtext is off, so a ``$`` in a run id is shown, not typeset;
text is drawn as paths, so the SVG holds no data-derived text outside escaped comments.
"""

from __future__ import annotations

import io
import re
import warnings
from typing import Any

import numpy as np
import pyarrow as pa

from ragtriage.experiments.runs_table import RunsComparison
from ragtriage.safe_text import visible

INSTALL_HINT = "pip install 'ragtriage[report]'"
_RC: Any = {"text.parse_math": False, "svg.fonttype": "path", "svg.hashsalt": "ragtriage", "font.size": 9}
_SVG = re.compile(r"<svg.*</svg>", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)  # RDF boilerplate naming creator and licence


def available() -> bool:
    """Whether matplotlib can be imported (the report then has its plots)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _label(text: str, width: int = 28) -> str:
    shown = visible(text)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def _svg(fig: object) -> str:
    buf = io.StringIO()
    with warnings.catch_warnings():
        # a control picture (␛) missing from the default font is drawn as a box; that is all the warning says
        warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")  # type: ignore[attr-defined]
    match = _SVG.search(buf.getvalue())
    return _METADATA.sub("", match.group(0)) if match else ""


def distribution(rc: RunsComparison) -> str:
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    measure = rc.measures[0]
    with rc_context(_RC):
        fig = Figure(figsize=(1.4 + 1.1 * len(rc.runs), 3.2))
        ax = fig.add_subplot()
        data = [rc.values[:, i, 0] for i in range(len(rc.runs))]
        ax.boxplot(data, showmeans=True)
        ax.set_xticks(range(1, len(rc.runs) + 1), [_label(r, 16) for r in rc.runs], rotation=20, ha="right")
        ax.set_ylabel(measure)
        ax.set_title(f"{measure} per case ({rc.n_cases} cases); triangle = mean")
        return _svg(fig)


def sorted_deltas(rc: RunsComparison) -> str:
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    measure = rc.measures[0]
    with rc_context(_RC):
        fig = Figure(figsize=(6.4, 3.2))
        ax = fig.add_subplot()
        for i, run in enumerate(rc.runs[1:], start=1):
            d = np.sort(rc.values[:, i, 0] - rc.values[:, 0, 0])
            ax.plot(np.arange(1, d.size + 1), d, label=_label(run))
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_xlabel("cases, sorted by difference")
        ax.set_ylabel(f"Δ {measure} vs {_label(rc.baseline, 20)}")
        ax.set_title(f"Per-case Δ {measure}, sorted")
        ax.legend(loc="upper left", fontsize=8)
        return _svg(fig)


def heatmap(rc: RunsComparison, by: str, slices: pa.Table) -> str:
    """Mean Δ of the first measure per slice (rows, worst first) and candidate run (columns)."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    measure = rc.measures[0]
    recs = [r for r in slices.to_pylist() if r["measure"] == measure and r["run_id"] != rc.baseline]
    names = list(dict.fromkeys(r["slice"] for r in recs))
    sizes = {r["slice"]: r["n"] for r in recs}
    if not names:
        return ""
    grid = np.array([r["delta"] for r in recs], dtype=np.float64).reshape(len(names), len(rc.runs) - 1)
    limit = max(float(np.nanmax(np.abs(grid))), 1e-9)
    with rc_context(_RC):
        fig = Figure(figsize=(2.4 + 1.2 * grid.shape[1], 1.0 + 0.32 * len(names)))
        ax = fig.add_subplot()
        image = ax.imshow(grid, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_xticks(range(grid.shape[1]), [_label(r, 16) for r in rc.runs[1:]], rotation=20, ha="right")
        ax.set_yticks(range(len(names)), [f"{_label(n)} (n={sizes[n]})" for n in names])
        for (y, x), v in np.ndenumerate(grid):
            colour = "white" if abs(v) > 0.6 * limit else "black"
            ax.text(x, y, f"{v:+.3f}", ha="center", va="center", fontsize=7, color=colour)
        fig.colorbar(image, ax=ax, label=f"Δ {measure}")
        ax.set_title(f"Δ {measure} by {_label(by, 20)} vs {_label(rc.baseline, 20)}")
        return _svg(fig)


def charts(rc: RunsComparison, by: str | None = None, slices: pa.Table | None = None) -> dict[str, str]:
    """Title -> inline SVG for every plot the data allows ({} when matplotlib is not installed)."""
    if not available():
        return {}
    measure = rc.measures[0]
    out = {f"Distribution of {measure} per run": distribution(rc)}
    if len(rc.runs) > 1 and rc.n_cases:
        out[f"Per-case Δ {measure}, sorted"] = sorted_deltas(rc)
    if by and slices is not None and slices.num_rows:
        out[f"Δ {measure} by {by} x run"] = heatmap(rc, by, slices)
    return {k: v for k, v in out.items() if v}
