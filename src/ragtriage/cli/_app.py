"""The typer application object shared by the command modules, and the few things every command does alike:
open the store (waiting for its lock with ``--wait``), refuse output paths that would destroy an input, print an
error literally and exit 2."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.status import Status
from rich.text import Text

from ragtriage.app.render.output import Format, Output, OutputError, emit
from ragtriage.paths import DEFAULT_DB
from ragtriage.safe_text import visible

if TYPE_CHECKING:
    import duckdb

    from ragtriage.store import StoreLocked

app = typer.Typer(
    name="ragtriage",
    help="Judge retrieval alone: metrics, leakage and scope checks, defect classification, release gate, triage TUI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # plain help: typer's rich help imports rich.markdown and markdown_it, a large share of start-up,
    # and plain text is what docs/cli.md records
    rich_markup_mode=None,
)
dataset_app = typer.Typer(
    help="Dataset quality: versions, splits and label checks.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(dataset_app, name="dataset")

_err = Console(stderr=True, soft_wrap=True)
_out = Console(soft_wrap=True)

#: Help text of every ``--force`` option.
FORCE_HELP = "Overwrite an existing output file (never the store, its notes or any database)."

# Set by the callback below on every invocation: whether commands wait for a store another process holds.
_WAIT: dict[str, bool] = {"wait": False}


def _print_version(value: bool) -> None:
    if value:
        from ragtriage import __version__

        typer.echo(f"ragtriage {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            envvar="RAGTRIAGE_WAIT",
            help="When another process holds the store (a load), wait for it instead of failing.",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Judge retrieval alone: metrics, leakage and scope checks, defect classification, release gate, triage TUI."""
    _WAIT["wait"] = wait


def fail(exc: Exception | str) -> typer.Exit:
    """Print an input error literally (controls made visible, no markup) and exit 2, as CI expects."""
    _err.print(visible(str(exc), keep_newlines=True), markup=False, highlight=False)
    return typer.Exit(2)


def split_runs(values: str | list[str] | None) -> list[str]:
    """``--runs "a,b" --runs c`` → ``["a", "b", "c"]`` (a run id cannot hold a comma here)."""
    given = [values] if isinstance(values, str) else values or []
    return [p.strip() for v in given for p in v.split(",") if p.strip()]


def say(text: object, *, err: bool = False) -> None:
    """A line of data-derived text on standard output (``err``: standard error): controls visible, no markup."""
    (_err if err else _out).print(visible(text), markup=False, highlight=False)


def open_store(db: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open the store for a command; a lock held by another process ends in one line, or with ``--wait`` a
    spinner until the lock is free. Raises StoreError for every other reason a store cannot be opened."""
    from ragtriage.store import connect

    if not _WAIT["wait"]:
        return connect(db, read_only=read_only)
    status: list[Status] = []

    def spin(locked: StoreLocked) -> None:
        who = f"PID {locked.pid} ({locked.holder})" if locked.pid is not None else "another process"
        status.append(_err.status(f"waiting for {visible(str(db))}: in use by {who}"))
        status[0].start()

    try:
        return connect(db, read_only=read_only, wait=float("inf"), on_wait=spin)
    finally:
        for s in status:
            s.stop()


#: The ``--db`` option of every command that reads a store.
DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB store file.")]
StrictIdsOpt = Annotated[
    bool,
    typer.Option(
        "--strict/--allow-control-ids",
        help="Refuse ids holding control characters (the default); --allow-control-ids loads them with a warning.",
    ),
]
DEFAULT_DB_PATH = Path(DEFAULT_DB)

#: The one ``--format`` option: every command that prints a result takes it (see ``ragtriage.app.render.output``).
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
    from ragtriage.store import StoreError

    if not db.exists():
        raise StoreError(f"{db}: no such database; create it with `ragtriage load --db {db} ...`")
    return open_store(db, read_only=read_only)


@contextlib.contextmanager
def store_for(db: Path, *, read_only: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """An existing store for the length of a block: any reason it cannot be opened, and unusable input met inside
    the block (``input_errors``), exits 2 with one line; the store is closed either way."""
    try:
        con = open_existing(db, read_only=read_only)
    except input_errors() as exc:
        raise fail(exc) from exc
    try:
        yield con
    except input_errors() as exc:
        raise fail(exc) from exc
    finally:
        con.close()


def output_path(path: Path, db: Path | None, force: bool) -> Path:
    """``path`` if writing there destroys no input (ragtriage.output_paths); else exit 2 saying why."""
    from ragtriage.output_paths import OutputRefused, check_output_path

    try:
        return check_output_path(path, store=db, force=force)
    except OutputRefused as exc:
        raise fail(exc) from exc


def shown(value: object) -> Text:
    """A data-derived cell or line for a rich table or console: controls visible, never read as markup."""
    return Text(visible(value))


def classified_first(db: Path) -> None:
    """Before a command reads classifications: store the classification of every run whose stored one is missing,
    partial or stale (``classify.refresh``: the chunks not done yet, each committed), saying so on a terminal's
    stderr, so the command reads whole runs. A store that cannot be written (a read-only file) is said on stderr,
    and the command classifies what it reads in memory, as a whole run."""
    from ragtriage.classify import pending, refresh
    from ragtriage.store import StoreError, StoreLocked

    if not db.exists():
        return  # the command's own open says so
    try:
        con = open_existing(db, read_only=True)
    except input_errors():
        return  # the command's own open says why, once
    try:
        missing = pending(con)
    except input_errors():
        return
    finally:
        con.close()
    if not missing:
        return
    if _err.is_terminal:  # a person waiting is told why; a script's stderr stays as it was
        say(f"classifying run(s) {', '.join(missing)} (not stored yet; each chunk is kept)", err=True)
    try:
        con = open_existing(db, read_only=False)
    except StoreLocked as exc:
        raise fail(exc) from exc
    except StoreError as exc:
        say(f"classification not stored ({exc}); this command classifies in memory", err=True)
        return
    try:
        refresh(con)
    except input_errors() as exc:
        raise fail(exc) from exc
    finally:
        con.close()
