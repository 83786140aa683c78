"""`record`: run every case of a dataset against a live retriever and write the contract's run folder.

Exit codes: 0 the run is complete, 2 bad input (found before any request), 130 stopped by Ctrl-C (a valid
partial run marked incomplete is written; ``--resume`` continues it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import app, say
from ragtriage.cli._app import fail as _fail
from ragtriage.contract.limits import MAX_CUTOFF

if TYPE_CHECKING:
    from ragtriage.record import Progress, RecordResult

err = Console(stderr=True, soft_wrap=True, highlight=False)


@app.command()
def record(
    dataset: Annotated[Path, typer.Option("--dataset", help="Dataset folder whose cases are asked.")],
    out: Annotated[Path, typer.Option("--out", help="Run folder to write (run.json, results.jsonl, events.jsonl).")],
    retriever: Annotated[
        str, typer.Option("--retriever", help="http(s)://host/path, python:module:function or python:file.py:obj.")
    ],
    k: Annotated[int, typer.Option("--k", min=1, max=MAX_CUTOFF, help="Final cutoff: hits kept per case.")],
    candidate_k: Annotated[
        int | None,
        typer.Option("--candidate-k", min=1, max=MAX_CUTOFF, help="Candidate-stage depth (recorded in run.json)."),
    ] = None,
    candidates: Annotated[
        str | None, typer.Option("--candidates", help="A second retriever whose hits are the candidate stage.")
    ] = None,
    request: Annotated[
        str | None,
        typer.Option("--request", help="JSON request template with {query} {k} {principal} {filters} {case_id}."),
    ] = None,
    method: Annotated[str, typer.Option("--method", help="HTTP method: POST (JSON body), GET or PUT.")] = "POST",
    header: Annotated[list[str] | None, typer.Option("--header", help="'Name: value' header (repeatable).")] = None,
    header_env: Annotated[
        list[str] | None, typer.Option("--header-env", help="'Name=ENV_VAR': header value from the environment.")
    ] = None,
    token_env: Annotated[
        str | None, typer.Option("--token-env", help="ENV_VAR holding a bearer token (Authorization header).")
    ] = None,
    hits: Annotated[str | None, typer.Option("--hits", help="Path to the hit list, e.g. results.")] = None,
    candidate_hits: Annotated[
        str | None, typer.Option("--candidate-hits", help="Path to the candidate-stage hit list.")
    ] = None,
    id_path: Annotated[str | None, typer.Option("--id", help="Path in a hit to the unit id.")] = None,
    document_id: Annotated[str | None, typer.Option("--document-id", help="Path in a hit to the document id.")] = None,
    score: Annotated[str | None, typer.Option("--score", help="Path in a hit to its score.")] = None,
    stage: Annotated[str | None, typer.Option("--stage", help="Path in a hit to its stage (candidate|final).")] = None,
    snippet: Annotated[str | None, typer.Option("--snippet", help="Path in a hit to a text snippet.")] = None,
    fallback: Annotated[str | None, typer.Option("--fallback", help="Path in the response to a fallback flag.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Path in the response to ok|insufficient_evidence|error.")
    ] = None,
    version: Annotated[
        list[str] | None, typer.Option("--version", help="'name=path': a version the response states (repeatable).")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="'key=value' for run.json, e.g. index_version=idx-7 (repeatable).")
    ] = None,
    filters: Annotated[
        str | None,
        typer.Option("--filters-applied", help="Filters applied, e.g. 'acl,tenant,region=false'."),
    ] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run id (default: the --out folder's name).")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at once.")] = 8,
    timeout: Annotated[float, typer.Option("--timeout", min=0.001, help="Seconds per request.")] = 10.0,
    retries: Annotated[int, typer.Option("--retries", min=0, help="Retries on HTTP connection errors.")] = 2,
    rate: Annotated[float | None, typer.Option("--rate", min=0.001, help="Requests per second at most.")] = None,
    warmup: Annotated[int, typer.Option("--warmup", min=1, help="Untimed requests first.")] = 1,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Ask each case N times for latency percentiles.")] = 1,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted recording in --out.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Record again over an existing run in --out.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Record a run from a live retriever (HTTP, Python callable, LangChain or LlamaIndex retriever)."""
    from ragtriage.cli import arg_checks
    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.contract.manifest import parse_dataset_manifest
    from ragtriage.record import RecordError, RecordOptions, RecordPlan, record_run
    from ragtriage.record.build import HttpOptions, filters_applied, make_retriever, pairs, response_shape
    from ragtriage.record.stages import TwoStageRetriever
    from ragtriage.store.discover import discover_dataset

    arg_checks.finite("--timeout", timeout)  # click's range lets NaN and inf through
    arg_checks.finite("--rate", rate)
    try:
        files = discover_dataset(dataset)
        manifest, findings = parse_dataset_manifest(files.manifest, default_name=dataset.name)
        if manifest is None:
            raise ValidationFailed(findings)
        named = {"hits": hits, "candidate_hits": candidate_hits, "id": id_path, "document_id": document_id}
        named |= {"score": score, "stage": stage, "snippet": snippet, "fallback": fallback, "status": status}
        shape = response_shape(manifest.unit, named, version or [])
        http = HttpOptions(
            request, method, tuple(header or ()), tuple(header_env or ()), token_env, timeout, retries, concurrency
        )
        engine = make_retriever(retriever, shape, http)
        if candidates:
            engine = TwoStageRetriever(engine, make_retriever(candidates, shape, http))
        options = RecordOptions(k, candidate_k, concurrency, timeout, rate, warmup, repeat)
        plan = RecordPlan(
            dataset, out, options, run_id, pairs(set_ or [], "--set", "="), filters_applied(filters), resume, force
        )
    except (RecordError, ValidationFailed, ValueError) as exc:
        raise _fail(exc) from None
    stop = threading.Event()
    bar = _Bar(enabled=progress)
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    try:
        with bar:
            result = record_run(
                plan,
                engine,
                on_progress=bar.update,
                stop=stop,
                on_start=lambda: _install(on_sigint),
            )
    except (RecordError, ValidationFailed, ValueError) as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        say("abandoned; the cases finished so far are journaled: continue with --resume", err=True)
        raise typer.Exit(130) from None
    finally:
        signal.signal(signal.SIGINT, previous)
    _summary(result, out)
    raise typer.Exit(0 if result.complete else 130)


def _install(handler: Callable[[int, FrameType | None], None]) -> None:
    """Ctrl-C once: stop cleanly and write a partial run; twice: abandon at once (the journal still resumes)."""
    signal.signal(signal.SIGINT, handler)


class _Bar:
    """A rich progress bar: cases done, cases/s, errors, timeouts and p95 latency so far (stderr)."""

    def __init__(self, enabled: bool) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("recording"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            console=err,
            disable=not enabled,
        )
        self.task = self.progress.add_task("record", total=None, stats="")

    def update(self, p: Progress) -> None:
        p95 = "–" if p.p95_ms is None else f"{p.p95_ms:.1f} ms"
        stats = f"{p.cases_per_s:.1f} cases/s  errors {p.errors}  timeouts {p.timeouts}  p95 {p95}"
        self.progress.update(self.task, completed=p.done, total=p.total, stats=stats)

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def _summary(result: RecordResult, out: Path) -> None:
    o, rec = result.outcome, result.manifest["record"]
    lat = rec["latency"]
    p = "no latency" if lat["p95_ms"] is None else f"p50 {lat['p50_ms']:.1f} ms, p95 {lat['p95_ms']:.1f} ms"
    say(
        f"recorded {o.recorded} of {o.total} cases into {out} at concurrency {rec['concurrency']}: "
        f"{p} over {lat['requests']} requests, {o.errors} error(s), {o.timeouts} timeout(s)",
        err=True,
    )
    if not o.recorded:
        say("stopped before the first case was recorded: nothing was written", err=True)
    elif not result.complete:
        say(f"stopped early: the run is marked incomplete; continue with --resume --out {out}", err=True)
