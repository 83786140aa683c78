"""SVG snapshots at 80×24 and 120×40 of every view (Compare also sliced by a case field, and its measure picker)
and the help screen; at 80×24 the case screen of a leaking case (q3), a zero-hit case (q2) and a dataset-defect case
with hostile text (q10), on the conftest store read through the real core; and the N-run Compare of three runs with
a case opened from it (the runs' final lists side by side).

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update`, then look at the pictures
(`tests/tui/__snapshots__/test_snapshots/*.svg`) before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ragtriage.tui.app import TriageApp
from tests.tui.helpers import settle

SIZE = (80, 24)
LARGE = (120, 40)
VIEWS = [(), ("s",), ("z",), ("l",), ("f",), ("c",), ("c", "d"), ("c", "m"), ("f", "question_mark")]
VIEW_IDS = [
    "overview",
    "slices",
    "zerohit",
    "leakage",
    "failures",
    "compare",
    "compare_sliced",
    "measure_picker",
    "help",
]


def app_for(db_path: Path) -> TriageApp:
    return TriageApp(db_path, "bm25", "hybrid", author="snap")


def pressing(*keys: str) -> Callable[[Any], Awaitable[None]]:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return go


def opening(case_id: str) -> Callable[[Any], Awaitable[None]]:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.open_case(case_id, [case_id])
        await settle(pilot)

    return go


@pytest.mark.parametrize("keys", VIEWS, ids=VIEW_IDS)
@pytest.mark.slow
def test_view(snap_compare: Any, db_path: Path, keys: tuple[str, ...]) -> None:
    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=pressing(*keys))


@pytest.mark.parametrize("keys", VIEWS, ids=VIEW_IDS)
@pytest.mark.slow
def test_view_at_120x40(snap_compare: Any, db_path: Path, keys: tuple[str, ...]) -> None:
    assert snap_compare(app_for(db_path), terminal_size=LARGE, run_before=pressing(*keys))


@pytest.mark.slow
@pytest.mark.parametrize("case_id", ["q3", "q2", "q10"], ids=["leaking", "zero_hit", "dataset_defect_hostile"])
def test_case_screen(snap_compare: Any, db_path: Path, case_id: str) -> None:
    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=opening(case_id))


@pytest.mark.slow
def test_compare_of_three_runs(snap_compare: Any, three_runs_db: Path) -> None:
    app = TriageApp(three_runs_db, "hybrid", "bm25", author="snap")
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("c"))


@pytest.mark.slow
def test_case_with_the_runs_side_by_side(snap_compare: Any, three_runs_db: Path) -> None:
    app = TriageApp(three_runs_db, "hybrid", "bm25", author="snap")
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("c", "enter", "j", "j", "j", "j", "j"))
