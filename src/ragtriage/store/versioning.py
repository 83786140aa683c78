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
    """md5 over the sorted md5s of each row's listed columns, joined by commas (``relation`` is a table name or a
    subquery); ``''`` when it has no rows.

    The row md5s are sorted by DuckDB (a sort it spreads over its threads; an ordered ``string_agg`` sorts and
    joins on one) and streamed into the md5 a batch at a time, so the joined text is never held whole."""
    import numpy as np
    import pyarrow as pa

    cols = ", ".join(f"{qident(c)} := {qident(c)}" for c in columns)
    sql = f"SELECT md5(CAST(struct_pack({cols}) AS VARCHAR)) AS h FROM {relation} ORDER BY h"
    digest, sep = hashlib.md5(), b""
    for batch in con.sql(sql).to_arrow_reader(_DIGEST_BATCH):
        h = batch.column(0).cast(pa.string())  # 32-bit offsets, whichever string layout DuckDB gave
        if len(h) == 0:
            continue
        # an md5 is 32 hex characters, so the batch's characters are an n x 32 block: append the commas to it
        ends = np.frombuffer(h.buffers()[1], dtype=np.int32, count=len(h) + 1, offset=h.offset * 4)
        chars = np.frombuffer(h.buffers()[2], dtype=np.uint8)[ends[0] : ends[-1]].reshape(len(h), 32)
        text = np.full((len(h), 33), ord(","), dtype=np.uint8)
        text[:, :32] = chars
        digest.update(sep + text.tobytes()[:-1])
        sep = b","
    return digest.hexdigest() if sep else ""


_DIGEST_BATCH = 1 << 17  # row md5s joined per batch: 32 characters each, a few MiB


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
    # a span's offsets are part of a label only on a span dataset (the other units' digests stay as they were)
    spans = () if m.unit == "span" else ("start", "end")
    digests = {
        k: relation_digest(con, staged[k].name, [n for n in tables[k].names() if n not in spans])
        for k in tables
        if k in staged
    }
    return combine(manifest_identity(m), digests)
