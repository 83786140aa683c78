"""SVG snapshots of the main views at 80×24 (regenerate with `pytest tests/tui --snapshot-update`).

The classifier and per-case metrics are the fixed stand-ins of conftest.py, so these pictures change only when
the TUI's rendering does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtriage.tui.app import TriageApp
from tests.tui.helpers import settle

SIZE = (80, 24)


def app_for(db_path: Path) -> TriageApp:
    return TriageApp(db_path, "bm25", "hybrid", author="snap")


async def _settle(pilot: Any) -> None:
    await settle(pilot)


def test_overview(snap_compare: Any, db_path: Path, fake_core: object) -> None:
    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=_settle)


def test_leakage(snap_compare: Any, db_path: Path, fake_core: object) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=go)


def test_failures(snap_compare: Any, db_path: Path, fake_core: object) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)

    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=go)


def test_case_detail(snap_compare: Any, db_path: Path, fake_core: object) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=go)


def test_help(snap_compare: Any, db_path: Path, fake_core: object) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app_for(db_path), terminal_size=SIZE, run_before=go)
