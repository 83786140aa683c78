"""Bring your own data: one load of qrels, topics and runs in whatever shape a team already has them.

``load_inputs(con, LoadRequest(...))`` is the one entry point: the CLI's ``load``, ``ragtriage.evaluate`` and the
store-less ``metrics --qrels --run`` all go through it. Every input may be

- a path: a dataset folder (contract, TREC or BEIR layout), a run folder (run.json + results), or a single file in
  any format ``contract.sniff`` recognises, plain, gzipped or bzip2-compressed, whatever its name;
- a Python dict-of-dicts (``{qid: {docno: grade or score}}``, the pytrec_eval / ranx shape);
- a pandas or polars DataFrame or a pyarrow Table (scanned in place by DuckDB).

The whole request is one transaction: the dataset version and every run are written, or nothing is, and the
``loads`` history records only what was committed. The returned ``LoadSummary`` says what was written and every
fact a report must print about it (topics ignored, scores derived from ranks, tags merged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.compression import head_bytes, plain_name, scratch
from ragtriage.contract.digest import prefetch
from ragtriage.contract.errors import Finding, ValidationFailed, errors_of, path_findings, unreadable
from ragtriage.contract.fields import CASES, LABELS, RESULTS
from ragtriage.contract.frames import is_frame, stage_frame
from ragtriage.contract.json_dicts import stage_json_dicts
from ragtriage.contract.manifest import DatasetManifest, parse_dataset_manifest, parse_run_manifest
from ragtriage.contract.sniff import Sniffed, SniffError, sniff
from ragtriage.contract.staging import Staged, compression_findings, drop_staged, sql_str, stage
from ragtriage.contract.traces import TraceOptions
from ragtriage.contract.traces.stage import TraceSource, source_label
from ragtriage.contract.trec import (
    CASE_COLUMNS,
    RunFacts,
    stage_beir_qrels,
    stage_msmarco_run,
    stage_trec_qrels,
    stage_trec_run,
    stage_trec_topics,
)
from ragtriage.store.discover import (
    RunFiles,
    Source,
    discover_dataset,
    discover_run,
    docno_is_chunk,
    stage_cases,
    stage_dataset,
    stage_run,
)
from ragtriage.store.grades import apply_grade_map, derived_scale, parse_grade_map
from ragtriage.store.load import LoadReport, Progress, RunWrite, noop, write_dataset, write_run
from ragtriage.store.memory_cap import capped
from ragtriage.store.trace_manifest import derive_manifest, first_span_time
from ragtriage.store.traces import (
    chunk_run,
    drop_trace_tables,
    match_cases,
    match_note,
    read_traces,
    stage_trace_run,
    trace_manifest,
    write_repeats,
)
from ragtriage.store.transactions import transaction

Input = Any  # Path | str | dict[str, dict[str, float]] | pandas/polars DataFrame | pyarrow Table


@dataclass(frozen=True)
class RunSource:
    """One run to load: ``source`` is a run folder, a run file, a dict-of-dicts or a DataFrame/Table.

    ``run_id`` names it (else run.json's run_id, else the TREC tag, else the file name); ``split_by_tag`` loads
    one run per tag of a TREC file; ``fmt`` names the format when sniffing should not decide."""

    source: Input
    run_id: str | None = None
    fmt: str | None = None
    split_by_tag: bool = False


@dataclass
class LoadRequest:
    """Everything one ``load`` names. ``dataset`` (a folder) and ``qrels`` (+ optional ``topics``) are
    alternatives. ``grade_map`` ("4:3,3:2" or {4: 3, 3: 2}) maps grades before anything else sees them;
    ``threshold`` (grade >= threshold is relevant) and the map are stored with the dataset version."""

    dataset: Path | str | None = None
    qrels: Input = None
    topics: Input = None
    runs: Sequence[RunSource | Input] = ()
    name: str | None = None
    unit: str | None = None
    threshold: int | None = None
    grade_map: str | dict[int, int] | None = None
    replace: bool = False
    fmt: str | None = None  # format of the tables of dataset/run folders (jsonl|csv|tsv|parquet)
    qrels_fmt: str | None = None
    topics_fmt: str | None = None
    strict: bool = True  # refuse ids holding control characters (False: load them with a warning and counts)
    # trace exports whose retriever spans become one run (needs a dataset): files, or Phoenix's span DataFrame
    traces: Sequence[TraceSource] = ()
    trace_run_id: str | None = None
    trace_options: TraceOptions | None = None


@dataclass
class LoadSummary:
    """What one committed load wrote: the dataset version (None when the request named none) and each run."""

    dataset: LoadReport | None
    runs: list[LoadReport] = field(default_factory=list)


def load_inputs(con: duckdb.DuckDBPyConnection, req: LoadRequest, progress: Progress = noop) -> LoadSummary:
    """Load ``req`` into ``con`` (a file store or ``connect(":memory:")``) as one transaction, with DuckDB's
    working memory capped on a file store (``memory_cap``)."""
    if req.dataset is not None and req.qrels is not None:
        raise ValueError("pass either a dataset folder or a qrels file, not both")
    if req.topics is not None and req.qrels is None:
        raise ValueError("topics need qrels: pass --qrels FILE with --topics FILE")
    grade_map = parse_grade_map(req.grade_map)
    with scratch(), capped(con), transaction(con):
        summary = _load(con, req, grade_map, progress)
    return summary


def _load(
    con: duckdb.DuckDBPyConnection, req: LoadRequest, grade_map: dict[int, int], progress: Progress
) -> LoadSummary:
    summary = LoadSummary(None)
    _hash_ahead(req)
    into_store = req.dataset is None and req.qrels is None
    if req.traces:
        if not req.trace_run_id:
            raise ValueError("--traces needs --run-id: the id of the run the spans become")
        if into_store:
            from ragtriage.store.connection import current_dataset_version

            current_dataset_version(con)  # the store's dataset the spans are matched to (exit 2 without one)
        progress("reading traces")
        read_traces(con, list(req.traces), _trace_options(req))
        left_out = _match_store_cases(con, req) if into_store else 0
    if req.dataset is not None:
        progress("reading cases, labels, documents")
        summary.dataset = _dataset_folder(con, req, grade_map)
    elif req.qrels is not None:
        progress("reading cases, labels, documents")
        summary.dataset = _byo_dataset(con, req, grade_map)
    seen: dict[str, str] = {}
    how = RunWrite(req.replace, req.strict, progress)
    for item in req.runs:
        src = item if isinstance(item, RunSource) else RunSource(item)
        progress("reading run")
        summary.runs += _load_run(con, src, req, seen, how)
    if req.traces:
        summary.runs.append(_trace_run(con, req, seen, how))
        if left_out:
            summary.runs[-1].extra_notes.append(
                f"{left_out:,} span(s) whose query is no case of the store's dataset left out (a load with "
                "--dataset/--qrels adds them as new unlabelled cases, which no figure counts)"
            )
    if summary.dataset is not None:
        _derived_manifest(con, req, summary)
    return summary


def _hash_ahead(req: LoadRequest) -> None:
    """Start hashing the files of the request's run folders on the digest thread (``contract.digest``): the
    ``loads`` record names each file's sha256, and a run's results are its largest file, so the hash is better
    taken while the dataset is read and checked than on its own after the rows are written. A TREC run file is
    hashed beside its own reading (``contract.trec_csv``); a path that is no run folder is left to its load,
    which reports it."""
    for item in req.runs:
        path = item.source if isinstance(item, RunSource) else item
        if isinstance(path, str | Path) and Path(path).is_dir():
            with suppress(ValidationFailed):
                rf = discover_run(Path(path), req.fmt)
                for f in (rf.results, rf.events):
                    if f is not None and f.is_file():
                        prefetch(f)


def _derived_manifest(con: duckdb.DuckDBPyConnection, req: LoadRequest, summary: LoadSummary) -> None:
    """Without a manifest loaded with the dataset, one derived from the trace runs' document metadata."""
    run = req.trace_run_id if req.traces else None
    note = derive_manifest(con, _current_unit(con), _trace_options(req), run)
    if note is not None:
        report = summary.runs[-1] if req.traces else summary.dataset
        if report is not None:
            report.extra_notes.append(note)


def _match_store_cases(con: duckdb.DuckDBPyConnection, req: LoadRequest) -> int:
    """Match the spans to the cases of the store's current dataset, which this load leaves as it is, and return
    how many chosen spans match none: such a span would be a new unlabelled case in a load with the dataset, in
    no figure either way, so here it is left out and counted."""
    con.execute("CREATE OR REPLACE TEMP TABLE stg_store_cases AS SELECT case_id AS id, query FROM cases")
    rows = int(con.execute("SELECT count(*) FROM stg_store_cases").fetchall()[0][0])
    match_cases(con, Staged("stg_store_cases", Path("store"), "store", rows, [], "row"), _trace_options(req))
    drop_staged(con, "stg_cases_traces")
    drop_staged(con, "stg_store_cases")
    left_out = int(con.execute("SELECT count(*) FROM trc_chosen WHERE how = 'new'").fetchall()[0][0])
    con.execute("DELETE FROM trc_match WHERE how = 'new'")
    return left_out


def _trace_options(req: LoadRequest) -> TraceOptions:
    return req.trace_options or TraceOptions()


def _with_trace_cases(con: duckdb.DuckDBPyConnection, req: LoadRequest, staged: dict[str, Staged]) -> None:
    """Add the cases of unmatched trace queries to the staged cases (they join this dataset version)."""
    if req.traces and not unreadable(staged["cases"].findings):
        staged["cases"] = match_cases(con, staged["cases"], _trace_options(req))


def _trace_run(con: duckdb.DuckDBPyConnection, req: LoadRequest, seen: dict[str, str], how: RunWrite) -> LoadReport:
    rid = str(req.trace_run_id)
    label = ", ".join(source_label(p, i) for i, p in enumerate(req.traces))
    _claim(rid, label, seen)
    staged, depth = stage_trace_run(con, _trace_options(req), label)
    unit = _current_unit(con)
    if unit == "chunk":  # a span's document.id names the retrieved node: the chunk
        chunk_run(con)
        docno_is_chunk(con, "stg_trace_results")
    manifest = trace_manifest(con, rid, depth)
    if (started := first_span_time(con)) is not None:
        manifest.setdefault("created_at", started)
    files = [(Path(p), 0) for p in req.traces if isinstance(p, (str, Path))]
    rep = write_run(con, rid, manifest, staged, _current_unit(con), "traces", RunFacts(), files, label, how)
    write_repeats(con, rid)
    rep.extra_notes.append(match_note(con, _trace_options(req)))
    drop_trace_tables(con)
    return rep


def _dataset_folder(con: duckdb.DuckDBPyConnection, req: LoadRequest, grade_map: dict[int, int]) -> LoadReport:
    files = discover_dataset(Path(req.dataset))  # type: ignore[arg-type]
    manifest, findings = parse_dataset_manifest(
        files.manifest, default_name=req.name or files.root.name, unit=req.unit, threshold=req.threshold
    )
    if manifest is None:
        raise ValidationFailed(findings)
    staged = stage_dataset(con, files, req.fmt)
    _with_trace_cases(con, req, staged)
    extra = [(files.manifest, 1)] if files.manifest else []
    return _write_dataset(
        con, manifest, staged, findings, grade_map, extra, foreign=files.manifest is None, strict=req.strict
    )


def _byo_dataset(con: duckdb.DuckDBPyConnection, req: LoadRequest, grade_map: dict[int, int]) -> LoadReport:
    name = req.name or (_stem(req.qrels) if isinstance(req.qrels, str | Path) else "dataset")
    manifest, findings = parse_dataset_manifest(None, default_name=name, unit=req.unit, threshold=req.threshold)
    if manifest is None:
        raise ValidationFailed(findings)
    staged = {"labels": stage_qrels(con, req.qrels, req.qrels_fmt)}
    if unreadable(staged["labels"].findings):  # a reader error aborts the transaction: nothing more can be read
        raise ValidationFailed(list(staged["labels"].findings))
    if req.topics is not None:
        staged["cases"] = stage_topics(con, req.topics, req.topics_fmt)
    else:
        # Without topics, the cases are the qrels' queries and each query is shown as its id.
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE stg_cases AS
                SELECT min(line) AS line, case_id AS id, case_id AS query, {CASE_COLUMNS}
                FROM stg_labels WHERE case_id IS NOT NULL GROUP BY case_id"""
        )
        n = con.execute("SELECT count(*) FROM stg_cases").fetchall()[0][0]
        staged["cases"] = Staged("stg_cases", staged["labels"].path, "derived", int(n), [], "line")
    if "cases" in staged:
        _with_trace_cases(con, req, staged)
    return _write_dataset(con, manifest, staged, findings, grade_map, [], foreign=True, strict=req.strict)


def _write_dataset(
    con: duckdb.DuckDBPyConnection,
    manifest: DatasetManifest,
    staged: dict[str, Staged],
    findings: list[Finding],
    grade_map: dict[int, int],
    extra_files: list[tuple[Path, int]],
    *,
    foreign: bool,
    strict: bool = True,
) -> LoadReport:
    for s in staged.values():
        findings = findings + s.findings
    if unreadable(findings):
        raise ValidationFailed(errors_of(findings))
    if grade_map:
        apply_grade_map(con, staged["labels"].name, grade_map)
        manifest.grade_map = grade_map
    if foreign:
        # No dataset.json: the scale is the one the (mapped) grades use, so 1..4 or -2..3 load as they are.
        manifest.grade_min, manifest.grade_max = derived_scale(con, staged["labels"].name, manifest)
    return write_dataset(con, manifest, staged, findings, extra_files, strict=strict)


Reader = Callable[[duckdb.DuckDBPyConnection, Path, Sniffed, bool], "tuple[Staged, RunFacts]"]
"""The reader of one (role, format): given the connection, the file, what sniffing found (a BEIR header) and
whether each TREC tag is ranked apart, it stages the file as its role's table (:data:`STAGED`)."""

STAGED = {"qrels": "stg_labels", "topics": "stg_cases", "run": "stg_results"}
_CONTRACT = {"qrels": LABELS, "topics": CASES, "run": RESULTS}


def _no_facts(staged: Staged) -> tuple[Staged, RunFacts]:
    return staged, RunFacts()


READERS: dict[tuple[str, str], Reader] = {
    ("qrels", "trec"): lambda con, path, kind, _: _no_facts(stage_trec_qrels(con, path, "stg_labels")),
    ("qrels", "beir"): lambda con, path, kind, _: _no_facts(
        stage_beir_qrels(con, path, "stg_labels", header=kind.header)
    ),
    ("qrels", "json"): lambda con, path, kind, _: stage_json_dicts(con, path, "stg_labels", "qrels"),
    ("topics", "trec-topics"): lambda con, path, kind, _: _no_facts(stage_trec_topics(con, path, "stg_cases")),
    ("topics", "tsv"): lambda con, path, kind, _: _no_facts(stage_cases(con, Source(path, "tsv"), None)),
    ("topics", "beir"): lambda con, path, kind, _: _no_facts(stage_cases(con, Source(path, "beir"), None)),
    ("run", "trec"): lambda con, path, kind, by_tag: stage_trec_run(con, path, "stg_results", by_tag=by_tag),
    ("run", "msmarco"): lambda con, path, kind, _: stage_msmarco_run(con, path, "stg_results"),
    ("run", "json"): lambda con, path, kind, _: stage_json_dicts(con, path, "stg_results", "run"),
}
"""Every foreign format per role, sniffed from the content (``contract.sniff``); the contract's own tables
(jsonl, csv, tsv, parquet) are read by ``contract.staging.stage`` with the role's table."""


def stage_file(
    con: duckdb.DuckDBPyConnection, path: Path, role: str, fmt: str | None = None, *, by_tag: bool = False
) -> tuple[Staged, RunFacts]:
    """Stage one file of ``role`` (qrels, topics, run) as :data:`STAGED`'s table: sniff, then its reader."""
    drop_staged(con, STAGED[role])  # a view (TREC) or a table (the others), whichever the last input left
    kind = _sniff(path, role, fmt)
    if role == "topics" and kind.fmt == "jsonl" and _has_key(path, "_id"):
        kind = Sniffed("beir")  # BEIR's queries.jsonl: _id and text
    reader = READERS.get((role, kind.fmt))
    if reader is not None:
        return reader(con, path, kind, by_tag)
    # a run's typed results are read once or twice by the load: a Parquet run is a view, not a copy
    return _no_facts(stage(con, path, _CONTRACT[role], STAGED[role], fmt=kind.fmt, materialize=role != "run"))


def stage_qrels(con: duckdb.DuckDBPyConnection, source: Input, fmt: str | None = None) -> Staged:
    """Stage qrels of any sniffed format (or a dict, or a frame) as ``stg_labels``."""
    if isinstance(source, dict):
        return stage_json_dicts(con, source, "stg_labels", "qrels")[0]
    if is_frame(source):
        return stage_frame(con, source, "stg_labels", "qrels")[0]
    return stage_file(con, Path(source), "qrels", fmt)[0]


def stage_topics(con: duckdb.DuckDBPyConnection, source: Input, fmt: str | None = None) -> Staged:
    """Stage topics of any sniffed format (or a frame) as ``stg_cases``."""
    if is_frame(source):
        return stage_frame(con, source, "stg_cases", "topics")[0]
    if isinstance(source, dict):
        raise ValueError("topics as a dict are not supported; pass a file or a DataFrame with id and query columns")
    return stage_file(con, Path(source), "topics", fmt)[0]


def _has_key(path: Path, key: str) -> bool:
    first = head_bytes(path, 4096).decode("utf-8", errors="replace").lstrip("\ufeff").split("\n", 1)[0]
    return f'"{key}"' in first


def _sniff(path: Path, role: str, fmt: str | None) -> Sniffed:
    missing = path_findings(path)
    if missing:
        raise ValidationFailed(missing)
    damaged = compression_findings(path)
    if damaged:
        raise ValidationFailed(damaged)
    try:
        return sniff(path, role, fmt)
    except SniffError as exc:
        message = str(exc).split(": ", 1)[-1]
        raise ValidationFailed([Finding(str(path), exc.line, None, "unreadable", message)]) from exc


def _stem(source: str | Path) -> str:
    name = plain_name(Path(source))
    for ext in (".txt", ".tsv", ".trec", ".run", ".qrels", ".json", ".jsonl", ".csv", ".parquet", ".gz"):
        if name.lower().endswith(ext) and len(name) > len(ext):
            name = name[: -len(ext)]
    return name


def _claim(rid: str, source: str, seen: dict[str, str]) -> None:
    """Two inputs of one load naming the same run id is an error before either is written."""
    if rid in seen:
        raise ValidationFailed(
            [
                Finding(
                    source,
                    None,
                    "run_id",
                    "duplicate-run",
                    f"run {rid!r} is also the id of {seen[rid]} in this load; give each run its own --run-id "
                    "(or --split-by-tag for a file holding several tags)",
                )
            ]
        )
    seen[rid] = source


def _load_run(
    con: duckdb.DuckDBPyConnection, src: RunSource, req: LoadRequest, seen: dict[str, str], how: RunWrite
) -> list[LoadReport]:
    unit = _current_unit(con)
    manifest: dict[str, Any] = {}
    files: list[tuple[Path, int]] = []
    label: str
    if isinstance(src.source, dict) or is_frame(src.source):
        drop_staged(con, "stg_results")
        role_fn = stage_json_dicts if isinstance(src.source, dict) else stage_frame
        staged, facts = role_fn(con, src.source, "stg_results", "run")
        label, default_id, fmt = str(staged.path), "run", staged.fmt
        parts = {"results": staged}
    else:
        path = Path(src.source)
        label = str(path)
        if path.is_dir():
            rf = discover_run(path, req.fmt)
            if not rf.trec:
                return [_write_folder_run(con, rf, src, unit, seen, how)]
            manifest = _run_manifest(rf.manifest)
            files = [(rf.manifest, 1)] if rf.manifest else []
            path = rf.results
        staged, facts = stage_file(con, path, "run", src.fmt, by_tag=src.split_by_tag)
        fmt = staged.fmt
        default_id = _stem(path)
        parts = {"results": staged}
        files = [*files, (path, staged.rows)]
    if unreadable(staged.findings):
        raise ValidationFailed(errors_of(staged.findings))
    if fmt in ("trec", "msmarco", "json", "frame") and unit == "chunk":
        docno_is_chunk(con, facts.base_table or "stg_results")
    tags = facts.tags
    if src.split_by_tag and len(tags) > 1:
        out = []
        for tag in tags:
            _claim(tag, label, seen)
            con.execute(f"CREATE OR REPLACE TEMP VIEW stg_tag AS SELECT * FROM stg_results WHERE tag = {sql_str(tag)}")
            part = Staged("stg_tag", staged.path, staged.fmt, tags[tag], staged.findings, staged.line_label)
            one = RunFacts({tag: tags[tag]}, facts.extra_column_lines, facts.score_from_rank)  # depth: per tag
            out.append(write_run(con, tag, dict(manifest), {"results": part}, unit, fmt, one, files, label, how))
        return out
    first_tag = next(iter(tags), None)
    rid = src.run_id or manifest.get("run_id") or first_tag or default_id
    renamed = ""
    if rid == first_tag and rid in seen and label not in seen.values() and not (src.run_id or manifest.get("run_id")):
        # two files of one load with the same TREC tag (every BEIR baseline's is its model's name): the second is
        # named after its file rather than refused, and the report says so (one file given twice is refused)
        renamed = (
            f"its run tag {rid!r} is also the id of {seen[rid]} in this load, so it is named after its file: "
            f"{default_id!r} (give --run-id to choose)"
        )
        rid = default_id
    _claim(rid, label, seen)
    warnings: list[Finding] = []
    if len(tags) > 1:
        counts = ", ".join(f"{t!r}: {n:,} lines" for t, n in list(tags.items())[:5])
        warnings.append(
            Finding(
                label,
                None,
                "tag",
                "tag-changes",
                f"the run tag changes within the file ({len(tags)} tags: {counts}); all lines were stored as one run "
                f"{rid!r}; pass --split-by-tag to load one run per tag",
                "warning",
            )
        )
    staged.findings = staged.findings + warnings
    report = write_run(con, rid, manifest, parts, unit, fmt, facts, files, label, how)
    report.renamed = renamed
    return [report]


def _run_manifest(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    parsed, findings = parse_run_manifest(path)
    if parsed is None:
        raise ValidationFailed(findings)
    return parsed


def _write_folder_run(
    con: duckdb.DuckDBPyConnection, rf: RunFiles, src: RunSource, unit: str, seen: dict[str, str], how: RunWrite
) -> LoadReport:
    manifest = _run_manifest(rf.manifest)
    rid = src.run_id or manifest.get("run_id") or rf.root.stem
    _claim(rid, str(rf.root), seen)
    staged, _ = stage_run(con, rf, unit)
    files = ([(rf.manifest, 1)] if rf.manifest else []) + [(s.path, s.rows) for s in staged.values()]
    return write_run(con, rid, manifest, staged, unit, "folder", RunFacts(), files, str(rf.root), how)


def _current_unit(con: duckdb.DuckDBPyConnection) -> str:
    from ragtriage.store.connection import current_dataset_version

    version = current_dataset_version(con)
    return str(con.execute("SELECT unit FROM datasets WHERE dataset_version = ?", [version]).fetchall()[0][0])


def load_dataset(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    fmt: str | None = None,
    unit: str | None = None,
    threshold: int | None = None,
    grade_map: str | dict[int, int] | None = None,
    progress: Progress = noop,
    strict: bool = True,
) -> LoadReport:
    """Load a dataset folder (dataset.json + cases + labels + documents, or a TREC/BEIR layout)."""
    req = LoadRequest(dataset=path, fmt=fmt, unit=unit, threshold=threshold, grade_map=grade_map, strict=strict)
    rep = load_inputs(con, req, progress).dataset
    assert rep is not None
    return rep


def load_run(
    con: duckdb.DuckDBPyConnection,
    path: Input,
    *,
    replace: bool = False,
    fmt: str | None = None,
    run_id: str | None = None,
    progress: Progress = noop,
    strict: bool = True,
) -> LoadReport:
    """Load one run (a folder with run.json + results + optional events, a run file, a dict or a DataFrame)."""
    folder_fmt = fmt if fmt in ("jsonl", "csv", "tsv", "parquet") else None
    run_fmt = None if fmt is None or (folder_fmt and Path(str(path)).is_dir()) else fmt
    req = LoadRequest(
        runs=[RunSource(path, run_id=run_id, fmt=run_fmt)], replace=replace, fmt=folder_fmt, strict=strict
    )
    return load_inputs(con, req, progress).runs[0]


__all__ = [
    "READERS",
    "LoadRequest",
    "LoadSummary",
    "RunSource",
    "drop_staged",
    "load_dataset",
    "load_inputs",
    "load_run",
    "stage_file",
]
