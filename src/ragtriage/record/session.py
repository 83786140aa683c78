"""One recording from start to finish: cases in, journal while running, the contract's run folder out.

``record_run`` is what the CLI calls and what a Python user can call: it reads the cases, opens (or resumes) the
run folder, runs the :class:`~ragtriage.record.runner.Recorder`, and writes run.json with everything the
release gate and a later reader need: k, candidate_k, the filters the retriever applies, the concurrency the
latencies were measured at, the retriever's spec without secrets, versions (``--set`` and those the responses
state), start and end times, the ragtriage version, and ``incomplete`` when it stopped early.

The cases (id, query, principal and filters) are read by the loader's stager: the cases file goes through the same
staging and type checks as ``ragtriage load`` (one reader of the contract), in a throwaway in-memory DuckDB; only
the cases are read, so a large corpus manifest costs nothing. The principal and filters are passed to the retriever
exactly as the file gives them.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.manifest import DatasetManifest, parse_dataset_manifest
from ragtriage.record.folder import JOURNAL, RunFolder
from ragtriage.record.runner import Outcome, Progress, Recorder, RecordOptions, percentiles
from ragtriage.record.types import Case, RecordError, Retriever
from ragtriage.store.discover import discover_dataset, stage_cases
from ragtriage.version import __version__

#: run.json fields a version may fill; any other ``--set`` key goes under ``system``.
RUN_FIELDS = ("dataset_version", "corpus_version", "index_version", "embedding_model", "chunking", "reranker")


@dataclass(frozen=True)
class DatasetCases:
    manifest: DatasetManifest
    cases: list[Case]


def read_cases(root: Path, fmt: str | None = None) -> DatasetCases:
    """Cases in file order; bad files raise :class:`ValidationFailed` naming file, line and field."""
    files = discover_dataset(root)
    manifest, findings = parse_dataset_manifest(files.manifest, default_name=root.name)
    if manifest is None:
        raise ValidationFailed(findings)
    con = duckdb.connect(":memory:")
    try:
        staged = stage_cases(con, files.cases, fmt)
        errors = [f for f in staged.findings if f.severity == "error"]
        if errors:
            raise ValidationFailed(errors)
        cols = {r[0] for r in con.execute(f"DESCRIBE {staged.name}").fetchall()}
        principal = "CAST(principal AS VARCHAR)" if "principal" in cols else "NULL"
        filters = "CAST(filters AS VARCHAR)" if "filters" in cols else "NULL"
        rows = con.execute(
            f"SELECT CAST(id AS VARCHAR), query, {principal}, {filters} FROM {staged.name} ORDER BY line"
        ).fetchall()
    finally:
        con.close()
    ids = [r[0] for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for n, i in enumerate(ids) if i in ids[:n])
        raise ValidationFailed([Finding(str(files.cases.path), None, "id", "duplicate", f"duplicate case id {dup}")])
    return DatasetCases(
        manifest,
        [Case(i, r[0], r[1], _json(r[2]), _json(r[3])) for i, r in enumerate(rows)],
    )


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class RecordPlan:
    dataset: Path
    out: Path
    options: RecordOptions
    run_id: str | None = None
    settings: dict[str, str] = field(default_factory=dict)
    filters_applied: dict[str, bool] | None = None
    resume: bool = False
    force: bool = False


@dataclass(frozen=True)
class RecordResult:
    outcome: Outcome
    manifest: dict[str, Any]
    complete: bool


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _header(plan: RecordPlan, retriever: Retriever, run_id: str, cases: DatasetCases) -> dict[str, Any]:
    """The settings a resumed recording must share with the interrupted one (JSON-normalised for comparison)."""
    o = plan.options
    head = {
        "dataset": str(plan.dataset.resolve()),
        "cases": len(cases.cases),
        "run_id": run_id,
        "k": o.k,
        "candidate_k": o.candidate_k,
        "repeat": o.repeat,
        "retriever": retriever.describe(),
    }
    normalised: dict[str, Any] = json.loads(json.dumps(head))
    return normalised


def build_manifest(
    plan: RecordPlan,
    header: dict[str, Any],
    cases: DatasetCases,
    outcome: Outcome,
    times: tuple[str, str],
) -> dict[str, Any]:
    o = plan.options
    stated = {k: v[0] for k, v in outcome.versions.items()}
    fields = {**stated, **plan.settings}
    top = {k: fields.get(k) for k in RUN_FIELDS}
    top["dataset_version"] = top["dataset_version"] or cases.manifest.version
    system = {k: v for k, v in fields.items() if k not in RUN_FIELDS}
    complete = not outcome.interrupted
    return {
        "run_id": header["run_id"],
        "created_at": times[0],
        **top,
        "k": o.k,
        "candidate_k": o.candidate_k,
        "filters_applied": plan.filters_applied,
        "concurrency": o.concurrency,
        "incomplete": not complete,
        "system": system,
        "record": {
            "ragtriage_version": __version__,
            "started_at": times[0],
            "ended_at": times[1],
            "complete": complete,
            "cases_recorded": outcome.recorded,
            "cases_total": outcome.total,
            "errors": outcome.errors,
            "timeouts": outcome.timeouts,
            "concurrency": o.concurrency,
            "timeout_s": o.timeout_s,
            "rate_limit_per_s": o.rate_per_s,
            "warmup_requests": o.warmup,
            "repeat": o.repeat,
            "latency": percentiles(outcome.latencies_ms),
            "versions_from_responses": outcome.versions,
            "versions_set": plan.settings,
            "retriever": header["retriever"],
        },
    }


def record_run(
    plan: RecordPlan,
    retriever: Retriever,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    stop: threading.Event | None = None,
    on_start: Callable[[], None] | None = None,
) -> RecordResult:
    """Record (or resume) a run folder; bad input raises :class:`RecordError` before any file is written.

    ``on_start`` runs once the folder is open, just before the first request: the CLI installs its Ctrl-C
    handler there. A Ctrl-C (``stop`` set, or the task cancelled) still writes a valid, partial run. A folder
    that cannot be written (a full disk, no permission) is a :class:`RecordError` naming the cause; what was
    journaled stays for ``--resume``.
    """
    try:
        return _record(plan, retriever, on_progress, stop, on_start)
    except OSError as exc:
        journaled = (plan.out / JOURNAL).exists()
        then = "; the cases finished so far are journaled: fix it and continue with --resume" if journaled else ""
        raise RecordError(f"cannot write the run folder {plan.out}: {exc.strerror or exc}{then}") from exc


def _record(
    plan: RecordPlan,
    retriever: Retriever,
    on_progress: Callable[[Progress], None] | None,
    stop: threading.Event | None,
    on_start: Callable[[], None] | None,
) -> RecordResult:
    cases = read_cases(plan.dataset)
    if not cases.cases:
        raise RecordError(f"{plan.dataset}: the dataset has no cases")
    run_id = plan.run_id or plan.out.resolve().name
    header = _header(plan, retriever, run_id, cases)
    folder = RunFolder(plan.out)
    if plan.resume:
        stored, done = folder.open_resume(header)
        started = str(stored.get("started_at") or _now())
    else:
        started = _now()
        folder.open_new({**header, "started_at": started}, force=plan.force)
        done = {}
    recorded = set(done)

    def keep(entry: dict[str, Any]) -> None:
        folder.append(entry)
        recorded.add(entry["case_id"])

    if on_start:
        on_start()
    recorder = Recorder(retriever, plan.options, keep, on_progress, stop)
    try:
        outcome = asyncio.run(recorder.run(cases.cases, done))
    except BaseException:
        # Nothing recorded yet (a pre-flight failure) leaves no run behind; otherwise keep what was journaled.
        if not recorded and not plan.resume:
            folder.abandon()
        raise
    manifest = build_manifest(plan, header, cases, outcome, (started, _now()))
    if not recorded:  # stopped before the first case: there is no run to write
        folder.abandon()
        return RecordResult(outcome, manifest, False)
    folder.finish(manifest, complete=not outcome.interrupted)
    return RecordResult(outcome, manifest, not outcome.interrupted)
