"""Dataset versions are content hashes: the same cases, labels, rubric and corpus give the same version.

A version is therefore reproducible from the files alone, and a reload of unchanged files is a no-op instead of
a second copy. Row order does not change the hash (rows are hashed, then the sorted row hashes).
"""

from __future__ import annotations

import hashlib
import json

import duckdb

from ragtriage.contract.fields import CASES, DOCUMENTS, LABELS
from ragtriage.contract.manifest import DatasetManifest
from ragtriage.contract.staging import Staged, qident


def relation_digest(con: duckdb.DuckDBPyConnection, relation: str, columns: list[str]) -> str:
    """md5 over the sorted md5s of each row's listed columns (``relation`` is a table name or a subquery)."""
    cols = ", ".join(f"{qident(c)} := {qident(c)}" for c in columns)
    row = con.execute(
        f"SELECT coalesce(md5(string_agg(h, ',' ORDER BY h)), '') FROM "
        f"(SELECT md5(CAST(struct_pack({cols}) AS VARCHAR)) AS h FROM {relation})"
    ).fetchone()
    return str(row[0]) if row else ""


def combine(manifest: dict[str, object], digests: dict[str, str]) -> str:
    payload = json.dumps({"manifest": manifest, "tables": digests}, sort_keys=True, default=str)
    return "ds-" + hashlib.sha256(payload.encode()).hexdigest()[:16]


def manifest_identity(m: DatasetManifest) -> dict[str, object]:
    identity = _identity(m)
    if m.grade_map:  # absent without a map, so versions made before grade maps existed keep their hash
        identity["grade_map"] = sorted(m.grade_map.items())
    return identity


def _identity(m: DatasetManifest) -> dict[str, object]:
    return {
        "name": m.name,
        "version": m.version,
        "unit": m.unit,
        "relevance_threshold": m.relevance_threshold,
        "grade_scale": [m.grade_min, m.grade_max],
        "rubric": m.rubric,
        "rubric_version": m.rubric_version,
        "corpus_snapshot": m.corpus_snapshot,
    }


def dataset_hash(con: duckdb.DuckDBPyConnection, m: DatasetManifest, staged: dict[str, Staged]) -> str:
    tables = {"cases": CASES, "labels": LABELS, "documents": DOCUMENTS}
    digests = {k: relation_digest(con, staged[k].name, tables[k].names()) for k in tables if k in staged}
    return combine(manifest_identity(m), digests)
