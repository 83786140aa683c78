"""The typer application object shared by the command modules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.output import Format, Output, OutputError, emit
from ragtriage.paths import DEFAULT_DB

if TYPE_CHECKING:
    import duckdb

app = typer.Typer(
    name="ragtriage",
    help="Judge retrieval alone: metrics, leakage and scope checks, defect classification, release gate, triage TUI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain help: typer's rich help imports rich.markdown and markdown_it (~0.15 s), half the start-up budget,
    # and plain text is what docs/cli.md records
    rich_markup_mode=None,
)
dataset_app = typer.Typer(
    help="Dataset quality: versions, splits and label checks.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(dataset_app, name="dataset")

_err = Console(stderr=True, soft_wrap=True)


def fail(exc: Exception) -> typer.Exit:
    """Print an input error literally (paths and data may hold rich markup) and exit 2, as CI expects."""
    _err.print(str(exc), markup=False, highlight=False)
    return typer.Exit(2)


#: The ``--db`` option of every command that reads a store.
DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB store file.")]
DEFAULT_DB_PATH = Path(DEFAULT_DB)

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


def input_errors() -> tuple[type[Exception], ...]:
    """The exceptions that mean unusable input (exit 2), imported only once one is raised: an ``except
    input_errors():`` clause is evaluated when an exception propagates, so a command's start-up stays light."""
    import duckdb

    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.store import StoreError

    return (StoreError, ValidationFailed, ValueError, OSError, duckdb.Error)


def open_existing(db: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open an existing store; never create one (a typo in --db must not leave an empty database behind)."""
    from ragtriage.store import StoreError, connect

    if not db.exists():
        raise StoreError(f"{db}: no such database; create it with `ragtriage load --db {db} ...`")
    return connect(db, read_only=read_only)
