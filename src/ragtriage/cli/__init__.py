"""The ``ragtriage`` command: typer over the core.

Each area registers its commands from its own module so that the CLI stays a thin layer and each module can be
read alone. Nothing here imports textual; ``tui``/``demo`` import it lazily.
"""

from __future__ import annotations

import gc

from ragtriage.cli import (  # noqa: F401  (register commands)
    annotate,
    checks,
    data,
    experiments,
    failures,
    gate,
    judge,
    metrics,
    record,
    trec_eval,
    tui,
)
from ragtriage.cli._app import app

#: The collector's first threshold for a command's process (Python's default is 700 allocations).
GC_THRESHOLD = 10_000


def main() -> None:
    """The ``ragtriage`` script. Start-up (imports, typer's parameters) builds many long-lived objects and little
    garbage: at the default threshold the collector walks them again and again. A higher threshold keeps
    collections for what a long command (the TUI) leaves behind, and what exists at exit is frozen, so the
    interpreter's teardown frees it without walking it once more."""
    gc.set_threshold(GC_THRESHOLD, 10, 10)
    try:
        app()
    finally:
        gc.freeze()
