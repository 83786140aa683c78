"""`load`, `info` and `validate`: getting data into the store and seeing what is there."""

from __future__ import annotations

import json
import threading
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, StrictIdsOpt, app, open_store, say
from ragtriage.cli._app import fail as _fail
from ragtriage.cli.trace_options import (
    CaseIdAttributeOpt,
    GroupsAttributeOpt,
    PrincipalAttributeOpt,
    RepeatedOpt,
    TraceDocIdOpt,
    TraceDocMetaOpt,
    TraceDocsOpt,
    TraceQueryOpt,
    TraceScoreOpt,
    trace_options,
)
from ragtriage.contract.limits import INT_MAX, INT_MIN
from ragtriage.safe_text import visible

if TYPE_CHECKING:
    from ragtriage.store import LoadSummary

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class LazyProgress:
    """A progress bar on a terminal that appears only when a load has taken longer than a second."""

    STEPS = (
        "reading manifest",
        "reading cases, labels, documents",
        "reading run",
        "checking rules",
        "writing",
        "classifying each run",
    )

    def __init__(self, label: str) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        )
        self.task = self.progress.add_task(label, total=5)
        self.label = label
        self.timer = threading.Timer(1.0, self.progress.start)

    def __call__(self, step: str) -> None:
        self.progress.update(self.task, description=f"{self.label}: {step}", advance=1)

    def __enter__(self) -> LazyProgress:
        if err.is_terminal:  # a log file gets no bar (stopping one there wrote a blank line)
            self.timer.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.timer.cancel()
        if err.is_terminal:
            self.progress.stop()


@app.command()
def load(
    ctx: typer.Context,
    db: DbOpt = DEFAULT_DB_PATH,
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset folder: contract (dataset.json, cases, labels), TREC or BEIR layout.")
    ] = None,
    qrels: Annotated[
        Path | None,
        typer.Option(help="Qrels file instead of a folder: TREC, BEIR TSV (header optional), JSON {qid: {doc: rel}}."),
    ] = None,
    topics: Annotated[
        Path | None,
        typer.Option(help="Topics for --qrels: TREC topic file, TSV (id, text) or JSONL; else cases come from qrels."),
    ] = None,
    run: Annotated[
        list[Path] | None,
        typer.Option(help="Run folder or file (TREC, MS MARCO, JSON, JSONL/CSV/Parquet); repeat for several."),
    ] = None,
    run_id: Annotated[
        list[str] | None, typer.Option("--run-id", help="Name of each --run, in the same order; repeat per run.")
    ] = None,
    split_by_tag: Annotated[
        bool, typer.Option("--split-by-tag", help="Load one run per tag of a TREC run file.")
    ] = False,
    replace: Annotated[bool, typer.Option(help="Replace runs whose run_id is already loaded.")] = False,
    fmt: Annotated[
        str | None, typer.Option("--format", help="Format of folder tables: jsonl|csv|tsv|parquet (or trec for runs).")
    ] = None,
    unit: Annotated[str | None, typer.Option(help="Unit for a dataset without dataset.json: chunk|document.")] = None,
    threshold: Annotated[
        int | None,
        typer.Option(
            min=INT_MIN, max=INT_MAX, help="Relevance threshold: grade >= threshold is relevant (trec_eval -l)."
        ),
    ] = None,
    grade_map: Annotated[
        str | None, typer.Option("--grade-map", help="Map grades at load, e.g. 4:3,3:2,2:1,1:0 (stored).")
    ] = None,
    precompute: Annotated[
        bool,
        typer.Option(
            help="Precompute each run's per-case metrics for the TUI, compare and gate (seconds per 10M result rows); "
            "--no-precompute stores the tables only."
        ),
    ] = True,
    wait_classified: Annotated[
        bool,
        typer.Option(
            "--wait-classified",
            help="Classify each run's failures and store them before returning (for CI and scripts); by "
            "default the TUI classifies in the background and `ragtriage classify` stores it later.",
        ),
    ] = False,
    strict: StrictIdsOpt = True,
    traces: Annotated[
        list[Path] | None,
        typer.Option(
            help="Trace export whose retriever spans become one run (OTLP/JSON, Phoenix span Parquet, Langfuse "
            "observations JSON/JSONL); repeatable; needs --dataset or --qrels; the last --run-id names it."
        ),
    ] = None,
    trace_query: TraceQueryOpt = None,
    trace_docs: TraceDocsOpt = None,
    trace_doc_id: TraceDocIdOpt = None,
    trace_score: TraceScoreOpt = None,
    case_id_attribute: CaseIdAttributeOpt = None,
    principal_attribute: PrincipalAttributeOpt = None,
    groups_attribute: GroupsAttributeOpt = None,
    repeated: RepeatedOpt = "first",
    trace_doc_meta: TraceDocMetaOpt = None,
) -> None:
    """Load a dataset and/or runs as one transaction: everything named is stored, or nothing is."""
    import duckdb

    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.loading import finish, load_inputs
    from ragtriage.store import StoreError
    from ragtriage.store.byo import LoadRequest, RunSource
    from ragtriage.store.grades import parse_grade_map

    runs = run or []
    ids = run_id or []
    trace_id = None
    if traces:
        if len(ids) != len(runs) + 1:
            raise _fail(ValueError("--traces needs its own --run-id (the last one given, after one per --run)"))
        ids, trace_id = ids[:-1], ids[-1]
    if dataset is None and qrels is None and not runs and not traces:
        raise _fail(
            ValueError(
                "nothing to load: pass --dataset DIR or --qrels FILE (with --topics FILE), and/or --run PATH "
                "(with --run-id ID), and/or --traces FILE --run-id ID"
            )
        )
    if ids and len(ids) != len(runs):
        raise _fail(ValueError(f"--run-id was given {len(ids)} time(s) for {len(runs)} --run; give one per run"))
    if split_by_tag and ids:
        raise _fail(ValueError("--split-by-tag names each run by its tag; leave out --run-id"))
    if dataset is not None and qrels is not None:
        raise _fail(ValueError("pass either --dataset DIR or --qrels FILE, not both"))
    if wait_classified and not precompute:
        raise _fail(ValueError("--wait-classified classifies at load; --no-precompute skips it: pass one of them"))
    try:
        parse_grade_map(grade_map)  # before the store is opened: a bad option leaves no file behind
    except ValueError as exc:
        raise _fail(exc) from exc
    sources = [
        RunSource(r, run_id=ids[i] if ids else None, fmt="trec" if fmt == "trec" else None, split_by_tag=split_by_tag)
        for i, r in enumerate(runs)
    ]
    req = LoadRequest(
        dataset=dataset,
        qrels=qrels,
        topics=topics,
        runs=sources,
        unit=unit,
        threshold=threshold,
        grade_map=grade_map,
        replace=replace,
        fmt=None if fmt == "trec" else fmt,
        strict=strict,
        traces=traces or [],
        trace_run_id=trace_id,
        trace_options=trace_options(ctx.params),
    )
    created = not db.exists()
    try:
        con = open_store(db, read_only=False)
    except (StoreError, duckdb.Error, OSError) as exc:
        raise _fail(exc) from exc
    try:
        with LazyProgress("load") as prog:
            result = load_inputs(con, req, prog, precompute=precompute, wait_classified=wait_classified)
    except (ValidationFailed, StoreError, ValueError, OSError, duckdb.Error) as exc:
        with suppress(duckdb.Error):  # a full disk may refuse the close's checkpoint too; the WAL replays
            con.close()
        if created:
            _remove_new_store(db)
        raise _fail(_disk_full_said(db, exc)) from exc
    with LazyProgress("overview summaries for the TUI") as prog:
        prog("metrics.summarize per run")
        finish(con, result)
    _print_summary(result.summary)
    for line in result.skipped if precompute else ():
        say(line)


def _disk_full_said(db: Path, exc: Exception) -> Exception | str:
    """A full disk in words a user acts on, instead of DuckDB's "IO Error: Could not write file ..."; any other
    error as it is."""
    from ragtriage.store.transactions import disk_full, write_refused

    if not disk_full(exc):
        return exc
    return (
        f"{db}: nothing was loaded, the store is as it was: {write_refused(exc)} (No space left on device while "
        "writing the load)"
    )


def _remove_new_store(db: Path) -> None:
    """A first load that failed leaves no file behind (an empty store would pass for a loaded one)."""
    if Path(f"{db}.wal").exists():
        Path(f"{db}.wal").unlink()
    if db.exists():
        db.unlink()


def _print_summary(summary: LoadSummary) -> None:
    rep = summary.dataset
    if rep is not None:
        counts = ", ".join(f"{v} {k}" for k, v in rep.rows.items())
        state = "unchanged (already loaded)" if rep.unchanged else "loaded"
        say(f"dataset {rep.target} {state}: {counts}")
        _print_warnings(rep.warnings)
    for r in summary.runs:
        counts = ", ".join(f"{v} {k} rows" for k, v in r.rows.items())
        say(f"run {r.target} loaded: {counts}")
        for note in r.notes():
            say(f"  note: {note}")
        _print_warnings(r.warnings)


def _print_warnings(warnings: list) -> None:  # type: ignore[type-arg]
    if not warnings:
        return
    by_code: dict[str, int] = {}
    for w in warnings:
        by_code[w.code] = by_code.get(w.code, 0) + 1
    summary = ", ".join(f"{n} {c}" for c, n in sorted(by_code.items()))
    say(f"  warnings: {summary} (see `ragtriage info --warnings`)", err=True)


@app.command()
def info(
    db: DbOpt = DEFAULT_DB_PATH,
    warnings: Annotated[bool, typer.Option("--warnings", help="List every load warning.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    limit: Annotated[int, typer.Option(help="Warnings listed by --warnings (0: all).")] = 50,
) -> None:
    """What the store holds: dataset identity and counts, runs, load history and warnings."""
    import duckdb

    from ragtriage.store import StoreError
    from ragtriage.store.info import store_info

    try:
        con = open_store(db, read_only=True)
        try:
            data = store_info(con, with_warnings=warnings, limit=limit or None)
        finally:
            con.close()
    except (StoreError, ValueError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    if as_json:
        console.print_json(json.dumps(data, default=str))
        return
    ds = data["dataset"]
    if ds:
        console.print(
            visible(f"dataset {ds['name']} {ds['version']} ({ds['dataset_version']}), unit {ds['unit']}, ")
            + f"relevance threshold {ds['relevance_threshold']}, grades {ds['grade_min']}..{ds['grade_max']}",
            markup=False,
            highlight=False,
            soft_wrap=False,
        )
        c = data["counts"]
        console.print(
            f"  {c['cases']} cases ({c['answerable']} answerable, {c['negative']} negative), {c['labels']} labels, "
            f"{c['documents']} corpus units from {c['corpus_documents']} documents",
            markup=False,
            highlight=False,
            soft_wrap=False,
        )
    from ragtriage.app.render.output import print_grid

    runs = [
        [
            visible(r["run_id"]),
            str(r["k"]),
            str(r["candidate_k"] or ""),
            str(r["final_rows"]),
            str(r["candidate_rows"]),
            str(r["events"]),
            visible(r["dataset_version"]),
            str(r["loaded_at"])[:19],
        ]
        for r in data["runs"]
    ]
    heads = ["run", "k", "cand k", "rows", "cand rows", "events", "dataset", "loaded"]  # fit 80 columns
    print_grid(console, "runs", heads, runs, [False, True, True, True, True, True, False, False])
    warned = [[visible(w["target"]), visible(w["code"]), str(w["n"])] for w in data["warning_counts"]]
    print_grid(console, "load warnings", ["target", "warning", "count"], warned, [False, False, True])
    listed = data.get("warnings", [])
    for w in listed:
        line = f"  {w['file']}:{w['line']}: {w['field']}: {w['message']}"
        say(line)
    total = data.get("warnings_total", 0)
    if total > len(listed):
        say(f"{len(listed):,} of {total:,} warnings shown; --limit 0 lists all")


@app.command()
def validate(
    ctx: typer.Context,
    path: Annotated[
        Path,
        typer.Argument(
            help="A contract file (cases/labels/documents/results/events table, dataset.json, run.json), a dataset "
            "or run folder, a qrels, topics or run file in TREC/BEIR/MS MARCO/JSON form (.gz/.bz2 too), or an "
            "OTLP/JSON trace export."
        ),
    ],
    table: Annotated[
        str | None,
        typer.Option(
            help="What the file holds when its name does not say: qrels|topics|run|cases|...; traces for a Phoenix "
            "span Parquet or Langfuse observations."
        ),
    ] = None,
    fmt: Annotated[
        str | None, typer.Option("--format", help="jsonl|csv|tsv|parquet, or trec|beir|msmarco|json|trec-topics.")
    ] = None,
    strict: StrictIdsOpt = True,
    trace_query: TraceQueryOpt = None,
    trace_docs: TraceDocsOpt = None,
    trace_doc_id: TraceDocIdOpt = None,
    trace_score: TraceScoreOpt = None,
    case_id_attribute: CaseIdAttributeOpt = None,
    principal_attribute: PrincipalAttributeOpt = None,
    groups_attribute: GroupsAttributeOpt = None,
    repeated: RepeatedOpt = "first",
    trace_doc_meta: TraceDocMetaOpt = None,
) -> None:
    """Check one file or folder against the contract without touching any store. Exit 2 on errors."""
    from ragtriage.store.validate_file import validate_file

    trace_opts = trace_options(ctx.params)
    try:
        findings = validate_file(path, table=table, fmt=fmt, strict=strict, trace_options=trace_opts)
    except ValueError as exc:
        raise _fail(exc) from exc
    errors = [f for f in findings if f.severity == "error"]
    for f in findings:
        say(f"{f.severity}: {f}", err=f.severity == "error")
    if errors:
        say(f"{len(errors)} error(s)", err=True)
        raise typer.Exit(2)
    say(f"{path}: valid ({len(findings)} warning(s))")
