"""The ``ragtriage`` command: typer over the core.

Each area registers its commands from its own module so that the CLI stays a thin layer and each module can be
read alone. Nothing here imports textual; ``tui``/``demo`` import it lazily.
"""

from __future__ import annotations

import copy
import gc
import sys
from collections.abc import Sequence

import typer
from typer.main import get_command_name
from typer.models import CommandInfo

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
#: The options of the ``ragtriage`` group itself that may stand before a command's name (flags, no value).
_GROUP_FLAGS = frozenset({"--wait"})


def invoked(args: Sequence[str]) -> typer.Typer:
    """The application that ``ragtriage ARGS`` needs: when ARGS name one top-level command, the application with
    that command alone (and the group's options), else the whole one. typer turns every registered command's
    signature into click parameters before it parses anything, which costs a one-off evaluation a good share of
    its start-up; a command runs the same from either application, with the same usage lines and messages, since
    the group keeps its name, its settings and its callback. Anything else (no command, ``--help``,
    ``--version``, a sub-group such as ``dataset``, a name that is none) goes to the whole application, which
    lists the commands and suggests a name."""
    rest = list(args)
    while rest and rest[0] in _GROUP_FLAGS:
        rest.pop(0)
    if not rest:
        return app
    named = [c for c in app.registered_commands if _name(c) == rest[0]]
    if len(named) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands = named
    only.registered_groups = []
    return only


def _name(command: CommandInfo) -> str:
    """A registered command's name, as typer names it."""
    if command.name:
        return command.name
    assert command.callback is not None
    return get_command_name(command.callback.__name__)


def main() -> None:
    """The ``ragtriage`` script. Start-up (imports, typer's parameters) builds many long-lived objects and little
    garbage: at the default threshold the collector walks them again and again. A higher threshold keeps
    collections for what a long command (the TUI) leaves behind, and what exists at exit is frozen, so the
    interpreter's teardown frees it without walking it once more."""
    gc.set_threshold(GC_THRESHOLD, 10, 10)
    try:
        invoked(sys.argv[1:])()
    finally:
        gc.freeze()
