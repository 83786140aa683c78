"""The typer application object shared by the command modules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import duckdb
import typer
from rich.console import Console

from ragtriage.output import Format, Output, OutputError, emit
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


#: The one ``--format`` option: every command that prints a result takes it (see ``ragtriage.output``).
FormatOpt = Annotated[
    Format, typer.Option("--format", help="Output: table, json, csv, markdown or trec (trec: metrics only).")
]


def show(out: Output, fmt: Format) -> None:
    """Print ``out`` in ``fmt``; a format the result cannot take exits 2 with the reason."""
    try:
        emit(out, fmt)
    except OutputError as exc:
        raise fail(exc) from exc


def open_existing(db: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open an existing store; never create one (a typo in --db must not leave an empty database behind)."""
    if not db.exists():
        raise StoreError(f"{db}: no such database; create it with `ragtriage load --db {db} ...`")
    return connect(db, read_only=read_only)
