"""One case in full: the case, each stage's ranked list with grades and ACL verdicts, the missing evidence and
the automatic classification (no textual here).

Failures and leakage are whole-run answers kept per run by :class:`ragtriage.tui.data.RunCache`, so moving
from case to case costs two small queries, not a re-classification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.notes import Note, NotesStore
from ragtriage.notes.export import first_column
from ragtriage.tui import data
from ragtriage.tui.data import RunCache

RESULTS_SQL = """
WITH r AS (
    SELECT * FROM results WHERE run_id = ? AND case_id = ?
), d AS (
    SELECT r.stage, r.rank, doc.title, doc.doc_type, doc.status AS doc_status, doc.tenant, doc.acl, doc.chunk_kind,
           doc.text
    FROM r JOIN documents doc ON doc.unit_id = r.unit_id AND (r.chunk_id IS NULL OR doc.chunk_id IS NULL
                                                             OR doc.chunk_id = r.chunk_id)
    QUALIFY row_number() OVER (PARTITION BY r.stage, r.rank ORDER BY doc.position) = 1
)
SELECT r.stage, r.rank, r.unit_id, q.grade, q.grade IS NULL AS unjudged, r.score, d.title, d.doc_type,
       d.doc_status, d.tenant, d.acl, d.chunk_kind, d.title IS NULL AND d.doc_type IS NULL AND d.text IS NULL
       AS not_in_corpus, coalesce(r.snippet, d.text) AS passage
FROM r LEFT JOIN qrels q ON q.case_id = r.case_id AND q.unit_id = r.unit_id
LEFT JOIN d ON d.stage = r.stage AND d.rank = r.rank
ORDER BY r.stage = 'final' DESC, r.rank
"""


@dataclass
class CaseDetail:
    run_id: str
    case: dict[str, Any]
    results: pa.Table
    verdicts: dict[tuple[str, int], str] = field(default_factory=dict)
    missing: pa.Table | None = None
    classification: pa.Table | None = None
    note: Note | None = None
    errors: dict[str, str] = field(default_factory=dict)


def case_detail(
    cur: duckdb.DuckDBPyConnection, run_id: str, case_id: str, store: NotesStore, cache: RunCache
) -> CaseDetail:
    case = data.one_row(cur, "SELECT * FROM cases WHERE case_id = ?", [case_id])
    if case is None:
        raise data.ViewError(f"case {case_id!r} is not in the current dataset")
    results = cur.sql(RESULTS_SQL, params=[run_id, case_id]).to_arrow_table()
    out = CaseDetail(run_id=run_id, case=case, results=results, note=store.get(run_id, case_id))
    try:
        out.verdicts = acl_verdicts(cache.get("leakage", run_id, cur), case_id)
    except data.ViewError as exc:
        out.errors["acl"] = str(exc)
    try:
        located = cache.get("unit_locations", run_id, cur)
        out.missing = located.filter(pc.equal(located.column("case_id"), case_id))
    except data.ViewError as exc:
        out.errors["missing"] = str(exc)
    try:
        fail = cache.get("failures", run_id, cur)
        out.classification = fail.filter(pc.equal(fail.column("case_id"), case_id))
    except data.ViewError as exc:
        out.errors["classification"] = str(exc)
    return out


def acl_verdicts(leaks: pa.Table, case_id: str) -> dict[tuple[str, int], str]:
    """(stage, rank) → the rule a leaked row broke, from the checks layer's leakage rows."""
    if "case_id" not in leaks.column_names:
        return {}
    mine = leaks.filter(pc.equal(leaks.column("case_id"), case_id)).to_pylist()
    rule = first_column(leaks, "rule", "reason", "violation") or "case_id"
    out: dict[tuple[str, int], str] = {}
    for r in mine:
        key = (str(r.get("stage", "final")), int(r.get("rank") or 0))
        out[key] = f"{out[key]}, {r[rule]}" if key in out else str(r[rule])
    return out
