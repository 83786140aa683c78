"""The overview's per-slice bars: one line per slice of metrics.slices, in its order, each with its own label and
its own mean printed at its bar; hostile slice values drawn as visible text."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.metrics.slices import slices
from ragtriage.safe_text import visible
from ragtriage.store import connect
from ragtriage.tui.app import TriageApp
from ragtriage.tui.widgets.plots import SliceBars, bar_lines
from tests.tui.helpers import pilot_test, settle


def core_slices(db: Path, run: str, k: int) -> list[tuple[str, float]]:
    con = connect(db, read_only=True)
    try:
        table = slices(con, run, "query_type", (k,), k=k)
    finally:
        con.close()
    return [(str(r["slice_value"]), float(r["mean"])) for r in table.to_pylist()]


@pytest.mark.slow
@pilot_test
async def test_one_bar_per_slice_with_its_own_value(hostile_db: Path) -> None:
    app = TriageApp(hostile_db, "bm25", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        bars = app.screen.query_one("#plot-slices", SliceBars)
        expected = core_slices(hostile_db, "bm25", 2)
        assert len(expected) >= 4
        shown = [(label, mean) for label, mean in bars.rows]
        assert [m for _, m in shown] == [m for _, m in expected]
        for (label, _), (value, _) in zip(shown, expected, strict=True):
            assert "\x1b" not in label and label.rstrip("…") in visible(value)
        lines = [line.plain for line in bar_lines(bars.rows, bars.size.width)]
        assert bars.size.height == len(expected) == len(lines)
        for line, (label, mean) in zip(lines, bars.rows, strict=True):
            assert line.startswith(label) and line.rstrip().endswith(f"{mean:.4f}")
            assert len(line) <= bars.size.width


def test_bars_scale_to_the_width_and_never_share_a_line() -> None:
    lines = [t.plain for t in bar_lines([("a", 0.0), ("long label", 0.5), ("c", 1.0), ("none", None)], 40)]
    # label width 10, then a space; 40 - 10 - 7 - 3 = 20 cells of bar; the value right-aligned in 7
    assert lines[0] == "a          " + " " * 20 + " 0.0000"
    assert lines[1] == "long label " + "█" * 10 + " " * 10 + " 0.5000"
    assert lines[2] == "c          " + "█" * 20 + " 1.0000"
    assert lines[3] == "none       " + " " * 20 + "      —"
    assert {len(line) for line in lines} == {38}
