"""The ``ragtriage`` command: typer over the core.

Each area registers its commands from its own module so that the CLI stays a thin layer and each module can be
read alone. Nothing here imports textual; ``tui``/``demo`` import it lazily.
"""

from __future__ import annotations

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


def main() -> None:
    app()
