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
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import (
    DEFAULT_DB_PATH,
    FORCE_HELP,
    app,
    classified_first,
    output_path,
    say,
    store_for,
)
from ragtriage.cli._app import fail as _fail
from ragtriage.cli.metrics_options import Cases, CasesOpt, StoreThresholdOpt
from ragtriage.contract.limits import MAX_CUTOFF

if TYPE_CHECKING:
    from ragtriage.loading import BackgroundLoad
    from ragtriage.tui.app import Build

err = Console(stderr=True, soft_wrap=True)

DbOpt = Annotated[Path, typer.Option("--db", help="DuckDB store file (opened read-only).")]
RunsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--run",
        help="Run to triage (default: the last run id); with --qrels/--dataset, a run file to load (repeatable).",
    ),
]


def _run_app(
    db: Path,
    run: str | None,
    baseline: str | None,
    author: str | None,
    build: Build | None = None,
    k: int | None = None,
) -> None:
    """The app on ``db``; with ``build``, the app writes the store first (its inputs' errors are reported here,
    once the terminal is restored, as the load reports them). ``k``: the cutoff every view reads."""
    from ragtriage.cli._app import input_errors
    from ragtriage.notes import NotesError
    from ragtriage.store import StoreError
    from ragtriage.tui.app import TriageApp

    try:
        triage = TriageApp(db, run, baseline, author=author, build=build, k=k)
    except (StoreError, NotesError, OSError) as exc:
        raise _fail(str(exc)) from exc
    triage.run()
    failed = triage.build_error
    if failed is not None:
        if isinstance(failed, input_errors()):
            raise _fail(str(failed)) from failed
        raise failed
    if triage.return_code:
        raise typer.Exit(triage.return_code)  # ended by SIGTERM


@app.command()
def tui(
    db: Annotated[Path | None, typer.Option("--db", help="DuckDB store file (default ragtriage.duckdb).")] = None,
    run: RunsOpt = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Run to compare against.")] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="Name on your notes (default $RAGTRIAGE_AUTHOR or login).")
    ] = None,
    qrels: Annotated[
        Path | None, typer.Option("--qrels", help="Qrels file: open the runs' files without a --db (see --rebuild).")
    ] = None,
    topics: Annotated[Path | None, typer.Option("--topics", help="Topics file beside --qrels.")] = None,
    dataset: Annotated[Path | None, typer.Option("--dataset", help="Dataset folder, instead of --qrels.")] = None,
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="With --qrels/--dataset: load the files again into a new cached store.")
    ] = False,
    threshold: StoreThresholdOpt = None,
    grade_map: Annotated[
        str | None,
        typer.Option("--grade-map", help="With --qrels/--dataset: map grades at load, e.g. 4:3,3:2,2:1,1:0."),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option("--k", min=1, max=MAX_CUTOFF, help="Cutoff of every view (default: run.json's k, else 10)."),
    ] = None,
    cases: CasesOpt = Cases.all,
) -> None:
    """Open the triage TUI on a store; notes are saved beside it in DB.notes.sqlite.

    With --qrels (or --dataset) and --run files, the store is built in the cache folder, keyed by the files'
    contents: the first opening loads them, the next ones open at once.
    """
    from ragtriage.metrics.context import Request, use_for_process

    runs = run or []
    if qrels is None and dataset is None:
        if topics is not None or rebuild:
            raise _fail("--topics and --rebuild go with --qrels or --dataset (opening files without a --db)")
        if grade_map is not None:
            raise _fail(
                "--grade-map maps grades as a store is loaded, and this store's grades are loaded: reload with "
                "`ragtriage load --grade-map`, or open the files with --qrels/--dataset --run --grade-map"
            )
        if len(runs) > 1:
            raise _fail("--run names one run to triage in a store; pass run files with --qrels or --dataset")
        use_for_process(Request(cases=cases.value, threshold=threshold))
        _run_app(db or DEFAULT_DB_PATH, runs[0] if runs else None, baseline, author, k=k)
        return
    if db is not None:
        raise _fail("pass either --db (a store) or --qrels/--dataset with --run files, not both")
    if not runs:
        raise _fail("--qrels/--dataset needs at least one --run file")
    path, build = _cached_store(qrels, topics, dataset, runs, rebuild, threshold, grade_map)
    use_for_process(Request(cases=cases.value))  # the threshold is the loaded store's own
    _run_app(path, None, baseline, author, build, k=k)


def _cached_store(
    qrels: Path | None,
    topics: Path | None,
    dataset: Path | None,
    runs: list[str],
    rebuild: bool,
    threshold: int | None = None,
    grade_map: str | None = None,
) -> tuple[Path, BackgroundLoad | None]:
    """Where the store of these files is in the cache folder, said on stderr, and the load that writes it when it
    is not there (or ``rebuild``), started now: Textual's import and the app's start overlap it, and the app
    follows it on a worker."""
    from ragtriage.cli._app import input_errors
    from ragtriage.loading import BackgroundLoad, cached_store_path
    from ragtriage.store.byo import LoadRequest, RunSource

    if qrels is not None and dataset is not None:
        raise _fail("pass either --dataset DIR or --qrels FILE, not both")
    req = LoadRequest(
        dataset=dataset,
        qrels=qrels,
        topics=topics,
        runs=[RunSource(Path(r)) for r in runs],
        threshold=threshold,
        grade_map=grade_map,
    )
    try:
        path = cached_store_path(req)
    except input_errors() as exc:
        raise _fail(str(exc)) from exc
    fresh = rebuild or not path.exists()
    how = "loading the files now; the next opening reads it" if fresh else "read from the cache, nothing loaded"
    say(f"store: {path} ({how}; keyed by the files' contents; --rebuild loads them again)", err=True)
    inputs = ", ".join(Path(str(p)).name for p in (dataset or qrels, *runs))
    return path, BackgroundLoad(req, path, rebuild=rebuild, what=inputs) if fresh else None


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
    from ragtriage.store import StoreError, connect, load_dataset, load_run, run_ids

    try:
        con = connect(target)
        try:
            load_dataset(con, root / "dataset")
            for run_dir in runs:
                load_run(con, run_dir)
            loaded = set(run_ids(con))
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
        say(f"demo store: {target} (notes kept beside it in {target.name}.notes.sqlite)", err=True)
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
    from ragtriage.csv_out import write_csv
    from ragtriage.notes import NotesError, NotesStore, notes_path_for
    from ragtriage.notes.export import ExportError, export_table

    output_path(csv, db, force)
    classified_first(db)
    try:
        with store_for(db) as con:
            rows = write_csv(export_table(con, NotesStore(notes_path_for(db)), run), csv)
    except (NotesError, ExportError) as exc:
        raise _fail(str(exc)) from exc
    say(f"wrote {rows} rows to {csv}", err=True)
