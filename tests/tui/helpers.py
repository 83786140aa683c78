"""Pilot helpers: wait for the view workers (never the long-lived notes writer) and read widget text."""

from __future__ import annotations

import asyncio
import functools
import io
import time
from collections.abc import Callable, Coroutine
from typing import Any

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

LONG_LIVED = {"notes"}


async def settle(pilot: Pilot[Any], timeout: float = 10.0) -> None:
    """Until no short worker runs and the notes queue is empty, then one more refresh."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    await pilot.pause()
    while time.monotonic() < deadline:
        busy = [w for w in app.workers if w.group not in LONG_LIVED and w.is_running]
        if not busy and app._notes_queue.unfinished_tasks == 0:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.02)
    else:
        raise TimeoutError("workers still running")
    await pilot.pause()
    await pilot.pause()


def plain(renderable: Any) -> str:
    console = Console(width=200, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def static_text(app: Any, selector: str) -> str:
    return plain(app.screen.query_one(selector, Static).content)


def pilot_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async pilot test without an async pytest plugin (none is a dependency)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return run
