"""`tui`, `demo` and `export-notes`: the triage UI and its CSV export.

Textual is imported only inside `tui`/`demo`, so `export-notes` and the other commands start without it.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import DEFAULT_DB_PATH, FORCE_HELP, app, classified_first, open_existing, output_path
from ragtriage.safe_text import visible

err = Console(stderr=True, soft_wrap=True)

DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB store file (opened read-only).")]
RunOpt = Annotated[str | None, typer.Option("--run", help="Run to triage (default: the last run id).")]


def _fail(message: str) -> typer.Exit:
    err.print(visible(message, keep_newlines=True), markup=False, highlight=False)
    return typer.Exit(2)


def _run_app(db: Path, run: str | None, baseline: str | None, author: str | None) -> None:
    from ragtriage.notes import NotesError
    from ragtriage.store import StoreError
    from ragtriage.tui.app import TriageApp

    try:
        triage = TriageApp(db, run, baseline, author=author)
    except (StoreError, NotesError, OSError) as exc:
        raise _fail(str(exc)) from exc
    triage.run()
    if triage.return_code:
        raise typer.Exit(triage.return_code)  # ended by SIGTERM


@app.command()
def tui(
    db: DbOpt = DEFAULT_DB_PATH,
    run: RunOpt = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Run to compare against.")] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="Name on your notes (default $RAGTRIAGE_AUTHOR or login).")
    ] = None,
) -> None:
    """Open the triage TUI on a store; notes are saved beside it in DB.notes.sqlite."""
    _run_app(db, run, baseline, author)


def sample_dir() -> Path:
    """The bundled sample (shipped inside the wheel, or the checkout's sample_runs/), else ./sample_runs."""
    from ragtriage.sample import sample_runs_path

    try:
        return sample_runs_path()
    except FileNotFoundError:
        return Path.cwd() / "sample_runs"


@app.command()
def demo(
    sample: Annotated[Path | None, typer.Option("--sample", help="Folder with dataset/ and runs/*.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Keep the demo store here (default: a temp dir).")] = None,
) -> None:
    """Load sample_runs into a fresh store and open the TUI on it (run hybrid-rerank against bm25, as the README
    shows); a store in a temp dir is removed on exit."""
    root = sample or sample_dir()
    runs = sorted(p for p in (root / "runs").glob("*") if p.is_dir())
    if not (root / "dataset").is_dir() or not runs:
        raise _fail(f"{root}: no dataset/ and runs/* here; pass --sample DIR")
    if db is not None:
        if db.exists():
            raise _fail(f"{db} exists; pass another --db or remove it")
        _demo(root, runs, db, temporary=False)
        return
    with _removed_on_exit(Path(tempfile.mkdtemp(prefix="ragtriage-demo-"))) as folder:
        _demo(root, runs, folder / "demo.duckdb", temporary=True)


@contextmanager
def _removed_on_exit(folder: Path) -> Iterator[Path]:
    """``folder``, removed with what it holds however the demo ends: quitting, an error, Ctrl-C or a SIGTERM
    (turned into an exit so the removal runs)."""
    previous = signal.getsignal(signal.SIGTERM)

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield folder
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(folder, ignore_errors=True)


def _demo(root: Path, runs: list[Path], target: Path, *, temporary: bool) -> None:
    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.sample import DEMO_BASELINE, DEMO_RUN
    from ragtriage.store import StoreError, connect, load_dataset, load_run

    try:
        con = connect(target)
        try:
            load_dataset(con, root / "dataset")
            for run_dir in runs:
                load_run(con, run_dir)
            loaded = {str(r[0]) for r in con.execute("SELECT run_id FROM runs").fetchall()}
        finally:
            con.close()
    except (StoreError, ValidationFailed, OSError, ValueError) as exc:
        raise _fail(f"loading {root} failed: {exc}") from exc
    run, baseline = demo_runs(loaded, DEMO_RUN, DEMO_BASELINE)
    if temporary:
        err.print(
            f"demo store: {target}, removed on exit with its notes (keep them: ragtriage demo --db FILE)", markup=False
        )
    else:
        err.print(f"demo store: {target} (notes kept beside it in {target.name}.notes.sqlite)", markup=False)
    _run_app(target, run, baseline, None)


def demo_runs(loaded: set[str], run: str, baseline: str) -> tuple[str | None, str | None]:
    """The README's run and baseline when the sample has them; otherwise what `tui` opens by default."""
    if run in loaded and baseline in loaded:
        return run, baseline
    return None, None


@app.command("export-notes")
def export_notes(
    db: DbOpt = DEFAULT_DB_PATH,
    csv: Annotated[Path, typer.Option("--csv", help="CSV file to write (UTF-8).")] = Path("notes.csv"),
    run: Annotated[str | None, typer.Option("--run", help="Only this run (default: every run).")] = None,
    force: Annotated[bool, typer.Option("--force", help=FORCE_HELP)] = False,
) -> None:
    """Write every failing or annotated case with auto and human triage and its metrics to CSV."""
    import duckdb

    from ragtriage.csv_out import write_csv
    from ragtriage.notes import NotesError, NotesStore, notes_path_for
    from ragtriage.notes.export import ExportError, export_table
    from ragtriage.store import StoreError

    output_path(csv, db, force)
    classified_first(db)
    try:
        con = open_existing(db, read_only=True)
        try:
            store = NotesStore(notes_path_for(db))
            rows = write_csv(export_table(con, store, run), csv)
        finally:
            con.close()
    except (StoreError, NotesError, ExportError, OSError, duckdb.Error) as exc:
        raise _fail(str(exc)) from exc
    err.print(visible(f"wrote {rows} rows to {csv}"), markup=False)
