"""The cases a recording asks: id, query, principal and filters, read from a dataset folder by the loader's stager.

The cases file goes through the same staging and type checks as ``ragtriage load`` (one reader of the
contract), in a throwaway in-memory DuckDB; only the cases are read, so a large corpus manifest costs nothing.
The principal and filters are passed to the retriever exactly as the file gives them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.manifest import DatasetManifest, parse_dataset_manifest
from ragtriage.store.discover import discover_dataset, stage_cases


@dataclass(frozen=True)
class Case:
    position: int
    case_id: str
    query: str
    principal: Any
    filters: Any


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
