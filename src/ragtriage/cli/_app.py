"""The typer application object shared by the command modules."""

from __future__ import annotations

from pathlib import Path

import duckdb
import typer
from rich.console import Console

from ragtriage.store import StoreError, connect

app = typer.Typer(
    name="ragtriage",
    help="Judge retrieval alone: metrics, leakage and scope checks, defect classification, release gate, triage TUI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dataset_app = typer.Typer(help="Dataset quality: versions, splits and label checks.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")

_err = Console(stderr=True, soft_wrap=True)


def fail(exc: Exception) -> typer.Exit:
    """Print an input error literally (paths and data may hold rich markup) and exit 2, as CI expects."""
    _err.print(str(exc), markup=False, highlight=False)
    return typer.Exit(2)


def open_existing(db: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open an existing store; never create one (a typo in --db must not leave an empty database behind)."""
    if not db.exists():
        raise StoreError(f"{db}: no such database; create it with `ragtriage load --db {db} ...`")
    return connect(db, read_only=read_only)
