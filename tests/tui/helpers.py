"""Pilot helpers: wait for the view workers (never the long-lived notes writer) and read widget text.

The waits follow the app's own signals (its workers finishing, its notes queue draining, a widget showing what a
test waits for), never a time budget: a slow or busy machine makes a test slower, not failing. HANG_GUARD only
stops a test that would otherwise wait forever on a real hang."""

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
#: Seconds after which a wait is a hang, not a slow machine (no wait of a passing test comes near it).
HANG_GUARD = 600.0


async def settle(pilot: Pilot[Any]) -> None:
    """Until no short worker runs and the notes queue is empty, then one more refresh. Running workers are awaited
    (their own completion is the signal); a worker started meanwhile is awaited in the next round."""
    app = pilot.app
    deadline = time.monotonic() + HANG_GUARD
    await pilot.pause()
    while True:
        busy = [w for w in app.workers if w.group not in LONG_LIVED and not w.is_finished]
        if not busy and app._notes_queue.unfinished_tasks == 0:  # type: ignore[attr-defined]
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"hung: workers {[w.name for w in busy]} still running after {HANG_GUARD:.0f} s")
        running = [w.wait() for w in busy if w.is_running]
        if running:
            await asyncio.gather(*running, return_exceptions=True)  # a failed or cancelled worker is finished too
        else:
            await asyncio.sleep(0.02)  # pending workers, or the notes writer still saving
    await pilot.pause()
    await pilot.pause()


async def until(predicate: Callable[[], bool]) -> None:
    """Until ``predicate()`` holds: a state of the app the test waits for (a section filled, a read finished)."""
    deadline = time.monotonic() + HANG_GUARD
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"hung: condition not reached after {HANG_GUARD:.0f} s")
        await asyncio.sleep(0.01)


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
