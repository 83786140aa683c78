"""`ragtriage validate`: the loader's checks without a store, for one file or one folder.

A table file inside a dataset folder is checked with its siblings (so unknown case ids and units absent from
the snapshot are found) and only its own findings are shown; a lone file gets the checks it can have alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from ragtriage.contract.compression import head_bytes, plain_name, scratch
from ragtriage.contract.errors import Finding, ValidationFailed, path_findings, unreadable
from ragtriage.contract.field_rules import field_rules
from ragtriage.contract.fields import CASES, LABELS, TABLES
from ragtriage.contract.manifest import parse_dataset_manifest, parse_run_manifest
from ragtriage.contract.rules import apply_rules, duplicate_rule
from ragtriage.contract.sniff import SniffError, sniff
from ragtriage.contract.staging import compression_findings, stage
from ragtriage.contract.traces import TraceOptions
from ragtriage.store.byo import load_dataset, stage_file, stage_qrels, stage_topics
from ragtriage.store.connection import connect
from ragtriage.store.dataset_rules import judgement_rule
from ragtriage.store.discover import TABLE_EXTS, discover_run, stage_run
from ragtriage.store.load import CONTRACT_FORMATS
from ragtriage.store.run_rules import run_findings
from ragtriage.store.traces import trace_format, validate_traces

DATASET_TABLES = ("cases", "labels", "documents")


def _checked(check: Callable[[duckdb.DuckDBPyConnection], list[Finding]]) -> list[Finding]:
    """The findings of ``check`` on an in-memory store; a refusal's errors are its findings."""
    con = connect(":memory:")
    try:
        return check(con)
    except ValidationFailed as exc:
        return exc.errors
    finally:
        con.close()


def _dataset_folder(path: Path, strict: bool = True) -> list[Finding]:
    return _checked(lambda con: load_dataset(con, path, strict=strict).warnings)


def _run_folder(path: Path, fmt: str | None, strict: bool = True) -> list[Finding]:
    def check(con: duckdb.DuckDBPyConnection) -> list[Finding]:
        files = discover_run(path, fmt)
        findings = parse_run_manifest(files.manifest)[1] if files.manifest is not None else []
        staged, _ = stage_run(con, files, "auto")
        findings += [f for s in staged.values() for f in s.findings]
        if not unreadable(findings):
            findings += run_findings(con, staged, "auto", check_refs=False, strict=strict)
        return findings

    return _checked(check)


FOREIGN = ("qrels", "topics", "run")


def _foreign_kind(path: Path) -> str | None:
    """qrels / topics / run for a file whose name is not a contract table's: from its name, else its content."""
    name = plain_name(path).lower()
    for hint, kind in (("qrel", "qrels"), ("topic", "topics"), ("quer", "topics"), ("run", "run")):
        if hint in name:
            return kind
    head = head_bytes(path, 4096).decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((x for x in head.splitlines() if x.strip() and not x.startswith("#")), "")
    if first.lower().lstrip().startswith("<top"):
        return "topics"
    n = len(first.split())
    return {4: "qrels", 6: "run"}.get(n) or ("run" if n > 6 else None)


def _validate_foreign(path: Path, kind: str, fmt: str | None, strict: bool = True) -> list[Finding]:
    """A qrels, topics or run file checked alone: its lines, then the rules that need no dataset."""

    def check(con: duckdb.DuckDBPyConnection) -> list[Finding]:
        if kind == "qrels":
            staged = stage_qrels(con, path, fmt)
        elif kind == "topics":
            staged = stage_topics(con, path, fmt)
        else:
            staged, _ = stage_file(con, path, "run", fmt)
        findings = list(staged.findings)
        if unreadable(findings):
            return findings
        if kind == "topics":
            rules = [*field_rules(CASES, strict=strict), duplicate_rule(["id"], "id", "topic id")]
            return findings + apply_rules(con, staged, rules)
        if kind == "qrels":
            return findings + apply_rules(con, staged, [*field_rules(LABELS, strict=strict), judgement_rule()])
        computed = staged.fmt not in CONTRACT_FORMATS
        return findings + run_findings(
            con, {"results": staged}, "auto", check_refs=False, reader_checked=computed, strict=strict
        )

    with scratch():
        return _checked(check)


def _is_run_dicts(path: Path) -> bool:
    """Whether a file named run.json is a pytrec_eval/ranx run ({qid: {docno: score}}) rather than a manifest."""
    try:
        return sniff(path, "run").fmt == "json"
    except SniffError as exc:
        return exc.line is not None  # JSON data the run reader refuses with its line, not a manifest


def validate_file(
    path: Path,
    *,
    table: str | None = None,
    fmt: str | None = None,
    strict: bool = True,
    trace_options: TraceOptions | None = None,
) -> list[Finding]:
    """Findings of one file or folder; ``strict`` makes control characters in ids errors; ``trace_options`` are
    the load's options a trace export is read with; given for anything else, they are refused rather than
    ignored (the user meant to check a reading that this file does not have)."""
    if path.is_dir():
        _no_trace_options(path, trace_options)
        if (path / "run.json").exists():
            return _run_folder(path, fmt, strict)
        return _dataset_folder(path, strict)
    missing = path_findings(path)
    if missing:
        return missing
    if path.name in ("dataset.json", "run.json") and table != "traces":
        _no_trace_options(path, trace_options)
    if path.name == "dataset.json":
        return parse_dataset_manifest(path)[1] or _dataset_folder(path.parent, strict)
    if path.name == "run.json" and table in (None, "run") and not _is_run_dicts(path):
        return parse_run_manifest(path)[1]
    damaged = compression_findings(path)
    if damaged:
        return damaged
    if table == "traces" or (table is None and trace_format(path) == "otlp"):
        return validate_traces(path, trace_options)
    _no_trace_options(path, trace_options)
    kind = table or path.name.split(".")[0]
    contract_ext = Path(plain_name(path)).suffix.lower() in TABLE_EXTS
    if kind in FOREIGN or (table is None and (kind not in TABLES or not contract_ext)):
        foreign = kind if kind in FOREIGN else _foreign_kind(path)
        if foreign is not None:
            return _validate_foreign(path, foreign, fmt, strict)
    if kind not in TABLES or kind in ("dataset", "run"):
        raise ValueError(
            f"{path}: cannot tell which table this is; pass --table qrels|topics|run|cases|labels|documents|results|"
            "events|traces"
        )
    if kind in DATASET_TABLES and (path.parent / "dataset.json").exists() and table is None:
        return [f for f in _dataset_folder(path.parent, strict) if f.file in (str(path), str(path.parent))]
    if kind in ("results", "events") and (path.parent / "run.json").exists() and table is None:
        return [f for f in _run_folder(path.parent, fmt, strict) if f.file in (str(path), str(path.parent))]
    con = connect(":memory:")
    try:
        staged = stage(con, path, TABLES[kind], "stg", fmt=fmt)
        if unreadable(staged.findings):
            return staged.findings
        return staged.findings + apply_rules(con, staged, field_rules(TABLES[kind], strict=strict))
    finally:
        con.close()


def _no_trace_options(path: Path, opts: TraceOptions | None) -> None:
    if opts is not None and opts != TraceOptions():
        raise ValueError(
            f"{path}: the --trace-*, --case-id-attribute, --principal-attribute, --groups-attribute and --repeated "
            "options read a trace export, and this is not one; pass --table traces if it is"
        )
