"""One case in full, from the core's whole-run answers (no textual here, no figure computed here).

Failures, leakage, staleness, unit locations and per-case metrics are whole-run answers kept per run by
:class:`ragtriage.tui.data.RunCache`; moving from case to case costs the case's ranked lists and its events,
two small queries. A section whose core call fails says so in ``errors``; the rest of the case still shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.notes import Note, NotesStore
from ragtriage.tui import data
from ragtriage.tui.data import Leak, RunCache

# The case's ranked lists with what the flags need: grade (unjudged when NULL), the document's status, whether
# the unit is in the corpus snapshot, and whether it repeats a unit ranked higher in the same list (the metrics
# keep only the first occurrence).
RESULTS_SQL = """
WITH r AS (
    SELECT stage, rank, unit_id, score, chunk_id, snippet,
           row_number() OVER (PARTITION BY stage, unit_id ORDER BY rank) > 1 AS duplicate
    FROM results WHERE run_id = ? AND case_id = ?
), d AS (
    SELECT r.stage, r.rank, doc.title, doc.status AS doc_status, doc.text
    FROM r JOIN documents doc ON doc.unit_id = r.unit_id AND (r.chunk_id IS NULL OR doc.chunk_id IS NULL
                                                             OR doc.chunk_id = r.chunk_id)
    QUALIFY row_number() OVER (PARTITION BY r.stage, r.rank ORDER BY doc.position) = 1
)
SELECT r.stage, r.rank, r.unit_id, q.grade, r.score, r.duplicate, d.title, d.doc_status,
       d.stage IS NULL AS not_in_corpus, coalesce(r.snippet, d.text) AS passage
FROM r LEFT JOIN qrels q ON q.case_id = ? AND q.unit_id = r.unit_id
LEFT JOIN d ON d.stage = r.stage AND d.rank = r.rank
ORDER BY r.stage = 'final' DESC, r.rank
"""

EVENTS_SQL = """
SELECT latency_ms, timed_out, empty, fallback, status, error FROM events WHERE run_id = ? AND case_id = ? LIMIT 1
"""


@dataclass
class CaseDetail:
    """Everything the case screen shows; ``errors`` holds the sections whose core call failed."""

    run_id: str
    k: int
    case: dict[str, Any]
    results: list[dict[str, Any]]
    baseline: str | None = None
    events: dict[str, Any] | None = None
    leaks: list[Leak] = field(default_factory=list)
    stale: dict[tuple[str, int], str] = field(default_factory=dict)
    relevant: set[str] = field(default_factory=set)
    locations: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    baseline_metrics: dict[str, Any] = field(default_factory=dict)
    note: Note | None = None
    errors: dict[str, str] = field(default_factory=dict)

    def leaked_at(self) -> dict[tuple[str, int], Leak]:
        return {(leak.stage, leak.rank): leak for leak in self.leaks}


def case_rows(table: pa.Table, case_id: str) -> list[dict[str, Any]]:
    """The rows of one case from a whole-run table (a handful)."""
    rows: list[dict[str, Any]] = table.filter(pc.equal(table.column("case_id"), case_id)).to_pylist()
    return rows


def case_detail(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_id: str,
    store: NotesStore,
    cache: RunCache,
    baseline: str | None = None,
) -> CaseDetail:
    case = data.one_row(cur, "SELECT * FROM cases WHERE case_id = ?", [case_id])
    if case is None:
        raise data.ViewError(f"case {case_id!r} is not in the current dataset")
    results = cur.sql(RESULTS_SQL, params=[run_id, case_id, case_id]).to_arrow_table().to_pylist()
    out = CaseDetail(run_id, cache.k(run_id, cur), case, results, baseline, note=store.get(run_id, case_id))
    out.events = data.one_row(cur, EVENTS_SQL, [run_id, case_id])
    try:
        out.leaks = data.case_leaks(cache.table("leakage", run_id, cur), case_id)
    except data.ViewError as exc:
        out.errors["leaks"] = str(exc)
    try:
        stale = case_rows(cache.table("stale", run_id, cur), case_id)
        out.stale = {(str(r["stage"]), int(r["rank"])): str(r["reason"]) for r in stale}
    except data.ViewError as exc:
        out.errors["stale"] = str(exc)
    try:
        out.locations = case_rows(cache.table("unit_locations", run_id, cur), case_id)
        out.relevant = {str(r["unit_id"]) for r in out.locations}
    except data.ViewError as exc:
        out.errors["missing"] = str(exc)
    try:
        out.failures = case_rows(cache.table("failures", run_id, cur), case_id)
    except data.ViewError as exc:
        out.errors["classification"] = str(exc)
    try:
        out.metrics = next(iter(case_rows(cache.table("per_case", run_id, cur), case_id)), {})
        if baseline:
            out.baseline_metrics = next(iter(case_rows(cache.table("per_case", baseline, cur), case_id)), {})
    except data.ViewError as exc:
        out.errors["metrics"] = str(exc)
    return out
