"""`ragtriage validate`: the loader's checks without a store, for one file or one folder.

A table file inside a dataset folder is checked with its siblings (so unknown case ids and units absent from
the snapshot are found) and only its own findings are shown; a lone file gets the checks it can have alone.
"""

from __future__ import annotations

from pathlib import Path

from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.field_rules import field_rules
from ragtriage.contract.fields import TABLES
from ragtriage.contract.manifest import parse_dataset_manifest, parse_run_manifest
from ragtriage.contract.rules import apply_rules
from ragtriage.contract.staging import stage
from ragtriage.store.connection import connect
from ragtriage.store.discover import discover_run, stage_run
from ragtriage.store.load import UNREADABLE, load_dataset
from ragtriage.store.run_rules import run_findings

DATASET_TABLES = ("cases", "labels", "documents")


def _dataset_folder(path: Path, strict: bool = False) -> list[Finding]:
    con = connect(":memory:")
    try:
        rep = load_dataset(con, path, strict=strict)
        return rep.warnings
    except ValidationFailed as exc:
        return exc.errors
    finally:
        con.close()


def _run_folder(path: Path, fmt: str | None, strict: bool = False) -> list[Finding]:
    con = connect(":memory:")
    try:
        files = discover_run(path, fmt)
        findings: list[Finding] = []
        if files.manifest is not None:
            findings += parse_run_manifest(files.manifest)[1]
        staged, _ = stage_run(con, files, "auto")
        for s in staged.values():
            findings += s.findings
        if not any(f.code in UNREADABLE for f in findings):
            findings += run_findings(con, staged, "auto", check_refs=False, strict=strict)
        return findings
    except ValidationFailed as exc:
        return exc.errors
    finally:
        con.close()


def validate_file(
    path: Path, *, table: str | None = None, fmt: str | None = None, strict: bool = False
) -> list[Finding]:
    """Findings of one file or folder; ``strict`` makes control characters in ids errors."""
    if path.is_dir():
        if (path / "run.json").exists():
            return _run_folder(path, fmt, strict)
        return _dataset_folder(path, strict)
    if not path.exists():
        return [Finding(str(path), None, None, "missing-file", "no such file")]
    if path.name == "dataset.json":
        return parse_dataset_manifest(path)[1] or _dataset_folder(path.parent, strict)
    if path.name == "run.json":
        return parse_run_manifest(path)[1]
    kind = table or path.name.split(".")[0]
    if kind not in TABLES or kind in ("dataset", "run"):
        raise ValueError(f"{path}: cannot tell which table this is; pass --table cases|labels|documents|results|events")
    if kind in DATASET_TABLES and (path.parent / "dataset.json").exists() and table is None:
        return [f for f in _dataset_folder(path.parent, strict) if f.file in (str(path), str(path.parent))]
    if kind in ("results", "events") and (path.parent / "run.json").exists() and table is None:
        return [f for f in _run_folder(path.parent, fmt, strict) if f.file in (str(path), str(path.parent))]
    con = connect(":memory:")
    try:
        staged = stage(con, path, TABLES[kind], "stg", fmt=fmt)
        if any(f.code in UNREADABLE for f in staged.findings):
            return staged.findings
        return staged.findings + apply_rules(con, staged, field_rules(TABLES[kind], strict=strict))
    finally:
        con.close()
