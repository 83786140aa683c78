"""One case in full (:func:`case_details`) and its read-ahead: only that case's rows are read, so a case opens in
the same time on a large store as on the sample; a section whose core call fails says so in
``CaseDetail.errors`` and the rest of the case still shows.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.app.browse.reads import (
    FAILURE_COLUMNS,
    LOCATION_COLUMNS,
    RunCache,
    StoreReader,
    T,
    ViewError,
    core,
    require,
)
from ragtriage.arrays import rows_where_in
from ragtriage.classify import failures as core_failures
from ragtriage.classify import unit_locations
from ragtriage.contract.relevance import derived_grades, is_relevant, spans_of
from ragtriage.metrics.per_case import per_case as core_per_case
from ragtriage.notes import Note, NotesStore
from ragtriage.store.corpus_manifest import COMPLETE_SQL
from ragtriage.store.dedup import occurrence


@dataclass(frozen=True)
class Leak:
    """One leaked result of a case: where it is, and every reason (rule and the check's sentence) in full."""

    stage: str
    rank: int
    unit_id: str
    reasons: list[str]


def case_leaks(leaks: pa.Table, case_id: str) -> list[Leak]:
    """The case's leaked results in the order ``checks.leakage`` gives them (``LEAK_ORDER``: final stage first,
    then by rank), a handful per case."""
    mine = rows_where_in(leaks, "case_id", [case_id])
    grouped: dict[tuple[str, int, str], list[str]] = {}
    for r in mine.select(["stage", "rank", "unit_id", "rule", "detail"]).to_pylist():
        unit, detail = str(r["unit_id"]), str(r["detail"])
        detail = detail.removeprefix(f"{unit}: ")  # the unit is on the line already
        grouped.setdefault((str(r["stage"]), int(r["rank"]), unit), []).append(f"{r['rule']}: {detail}")
    return [Leak(s, rank, unit, reasons) for (s, rank, unit), reasons in grouped.items()]


#: Unit span: a result's grade is the one overlap rule's (``relevance.derived_grades``, at the default
#: min_overlap), its passage the document text of its span, and ``evidence`` the relevant evidence inside it as
#: offsets into that passage (the case screen highlights them).
RESULTS_SQL = f"""
WITH r AS (
    SELECT case_id, stage, rank, unit_id, score, chunk_id, snippet, metadata->>'trace_id' AS trace_id,
           document_id, span_start, span_end, {occurrence("case_id, stage")} > 1 AS duplicate
    FROM results WHERE run_id = $run_id AND case_id IN (SELECT unnest($case_ids::VARCHAR[]))
), q AS (
    SELECT case_id, unit_id, grade FROM qrels WHERE case_id IN (SELECT unnest($case_ids::VARCHAR[]))
), d AS (
    SELECT r.case_id, r.stage, r.rank, doc.title, doc.status AS doc_status,
           CASE WHEN r.span_start IS NULL THEN doc.text
                ELSE substring(doc.text, r.span_start + 1, r.span_end - r.span_start) END AS text
    FROM r JOIN documents doc ON doc.unit_id = r.unit_id AND (r.chunk_id IS NULL OR doc.chunk_id IS NULL
                                                             OR doc.chunk_id = r.chunk_id)
                              OR r.span_start IS NOT NULL AND doc.document_id = r.document_id
                                 AND doc.chunk_id IS NULL AND doc.section_id IS NULL
    QUALIFY row_number() OVER (PARTITION BY r.case_id, r.stage, r.rank ORDER BY doc.position) = 1
), ev AS (
    SELECT r.case_id, r.stage, r.rank,
           list({{'s': greatest(v.s, r.span_start) - r.span_start, 'e': least(v.e, r.span_end) - r.span_start}}
                ORDER BY v.s) AS evidence
    FROM r JOIN {spans_of(f"(SELECT * FROM q WHERE {is_relevant()})")} v
         ON v.case_id = r.case_id AND v.d = r.document_id AND v.s < r.span_end AND r.span_start < v.e
    GROUP BY ALL
)
SELECT r.case_id, r.stage, r.rank, r.unit_id, coalesce(q.grade, g.grade) AS grade, r.score, r.duplicate, d.title,
       d.doc_status, d.stage IS NULL AND {COMPLETE_SQL} AS not_in_corpus,
       CASE WHEN r.span_start IS NOT NULL AND d.text IS NOT NULL THEN d.text
            ELSE coalesce(r.snippet, d.text) END AS passage, r.trace_id,
       CASE WHEN d.text IS NOT NULL THEN ev.evidence END AS evidence
FROM r LEFT JOIN q USING (case_id, unit_id)
LEFT JOIN ({derived_grades("(SELECT * FROM r WHERE span_start IS NOT NULL)", "q")}) g USING (case_id, unit_id)
LEFT JOIN d USING (case_id, stage, rank)
LEFT JOIN ev USING (case_id, stage, rank)
ORDER BY r.case_id, r.stage = 'final' DESC, r.rank
"""

EVENTS_SQL = """
SELECT case_id, first(latency_ms) AS latency_ms, first(timed_out) AS timed_out, first(empty) AS empty,
       first(fallback) AS fallback, first(status) AS status, first(error) AS error
FROM events WHERE run_id = $run_id AND case_id IN (SELECT unnest($case_ids::VARCHAR[])) GROUP BY case_id
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


def by_case(table: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """A table of several cases' rows as lists per case (rows keep their order)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        out.setdefault(str(row["case_id"]), []).append(row)
    return out


def case_failures(
    cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str], cache: RunCache
) -> dict[str, list[dict[str, Any]]]:
    """The cases' failure rows, read for those cases alone: from the store when the stored classification is
    fresh or their chunk is stored, else classified on the spot for their own case range (``classify.failures``);
    a run classified whole in memory before (a store the app cannot write) is read from that."""
    if not cache.fresh(run_id, cur) and cache.has("classification", run_id):
        rows = cache.classification(run_id, cur).rows
        return by_case(rows_where_in(rows, "case_id", case_ids))
    rows = core("classify.failures", core_failures, cur, run_id, k=cache.k(run_id, cur), case_ids=case_ids)
    return by_case(require(rows, FAILURE_COLUMNS, "classify.failures"))


def case_metrics(cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str], k: int) -> dict[str, Any]:
    """Each case's measures in ``run_id`` at ``k`` (none for a case without a label: it has no measure)."""
    table = core("metrics.per_case", core_per_case, cur, run_id, (k,), counts=False, cases=case_ids)
    return {str(r["case_id"]): r for r in table.to_pylist()}


def case_detail(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_id: str,
    store: NotesStore,
    cache: RunCache,
    baseline: str | None = None,
) -> CaseDetail:
    found = case_details(cur, run_id, [case_id], store, cache, baseline)
    if not found:
        raise ViewError(f"case {case_id!r} is not in the current dataset")
    return found[0]


#: Reads of one case run side by side: each is a few small queries whose time is mostly per-query overhead, so
#: on two cores the case opens in the time of the slowest read, not of their sum.
_READS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="case-read")


def _on_own_cursor(con: duckdb.DuckDBPyConnection, fn: Callable[..., T], *args: Any) -> Future[T]:
    def run() -> T:
        cur = con.cursor()
        try:
            return fn(cur, *args)
        finally:
            cur.close()

    return _READS.submit(run)


def case_detail_soon(
    reader: StoreReader,
    run_id: str,
    case_id: str,
    store: NotesStore,
    cache: RunCache,
    baseline: str | None,
    then: Callable[[CaseDetail], T],
) -> Future[T]:
    """``then(case_detail(...))`` started now on a cursor of its own, for a case screen that is not built yet: the
    reads (and ``then``, the screen's layout of the sections) run while the list is shown or Textual mounts the
    screen, not after it."""

    def run() -> T:
        with reader.cursor() as cur:
            detail = case_detail(cur, run_id, case_id, store, cache, baseline)
        return then(detail)

    return _EARLY.submit(run)


#: one early read at a time (a person opens one case per key press); it fans out to :data:`_READS` itself
_EARLY = ThreadPoolExecutor(max_workers=1, thread_name_prefix="case-open")


def _head(cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str]) -> tuple[Any, Any, Any]:
    """The cases' rows, ranked lists and run events."""
    params = {"run_id": run_id, "case_ids": case_ids}
    cases = cur.sql(
        "SELECT * FROM cases WHERE case_id IN (SELECT unnest($case_ids::VARCHAR[]))", params={"case_ids": case_ids}
    )
    found = {str(c["case_id"]): c for c in cases.to_arrow_table().to_pylist()}
    results = by_case(cur.sql(RESULTS_SQL, params=params).to_arrow_table())
    events = {str(e["case_id"]): e for e in cur.sql(EVENTS_SQL, params=params).to_arrow_table().to_pylist()}
    return found, results, events


def _located(cur: duckdb.DuckDBPyConnection, run_id: str, case_ids: list[str], k: int) -> dict[str, Any]:
    located = core("classify.unit_locations", unit_locations, cur, run_id, case_ids, k=k)
    return by_case(require(located, LOCATION_COLUMNS, "classify.unit_locations"))


def case_details(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_ids: list[str],
    store: NotesStore,
    cache: RunCache,
    baseline: str | None = None,
) -> list[CaseDetail]:
    """Several cases at once (the case opened, or the neighbours `n`/`p` will show next): each query reads the
    rows of these cases only, and a batch costs about what one case does; the reads run side by side, each on its
    own cursor. Cases not in the dataset are left out."""
    k = cache.k(run_id, cur)
    cache.fresh(run_id, cur)  # before the reads fan out, so they never race to compute it
    head = _on_own_cursor(cur, _head, run_id, case_ids)
    reads: dict[str, Future[Any]] = {
        "classification": _on_own_cursor(cur, case_failures, run_id, case_ids, cache),
        "missing": _on_own_cursor(cur, _located, run_id, case_ids, k),
        "metrics": _on_own_cursor(cur, case_metrics, run_id, case_ids, k),
    }
    if baseline:
        reads["baseline"] = _on_own_cursor(cur, case_metrics, baseline, case_ids, k)
    try:
        return _fill(cur, run_id, case_ids, store, cache, baseline, k, head, reads)
    finally:
        wait([head, *reads.values()])  # no read outlives the connection it runs on


def _fill(
    cur: duckdb.DuckDBPyConnection,
    run_id: str,
    case_ids: list[str],
    store: NotesStore,
    cache: RunCache,
    baseline: str | None,
    k: int,
    head: Future[tuple[Any, Any, Any]],
    reads: dict[str, Future[Any]],
) -> list[CaseDetail]:
    found, results, events = head.result()
    out = {
        cid: CaseDetail(run_id, k, found[cid], results.get(cid, []), baseline, note=store.get(run_id, cid))
        for cid in case_ids
        if cid in found
    }
    for d in out.values():
        d.events = events.get(d.case["case_id"])

    def each(section: str, fill: Callable[[], None]) -> None:
        try:
            fill()
        except ViewError as exc:
            for d in out.values():
                d.errors[section] = str(exc)

    def failures() -> None:
        rows = reads["classification"].result()
        for cid, d in out.items():
            d.failures = rows.get(cid, [])

    def locations() -> None:
        rows = reads["missing"].result()
        for cid, d in out.items():
            d.locations = rows.get(cid, [])
            d.relevant = {str(r["unit_id"]) for r in d.locations}

    def metrics() -> None:
        mine = reads["metrics"].result()
        base = reads["baseline"].result() if "baseline" in reads else {}
        for cid, d in out.items():
            d.metrics, d.baseline_metrics = mine.get(cid, {}), base.get(cid, {})

    def leaks() -> None:
        table = cache.table("leakage", run_id, cur)
        for cid, d in out.items():
            d.leaks = case_leaks(table, cid)

    def stale() -> None:
        rows = by_case(rows_where_in(cache.table("stale", run_id, cur), "case_id", list(out)))
        for cid, d in out.items():
            d.stale = {(str(r["stage"]), int(r["rank"])): str(r["reason"]) for r in rows.get(cid, [])}

    each("classification", failures)
    each("missing", locations)
    each("metrics", metrics)
    each("leaks", leaks)
    each("stale", stale)
    return list(out.values())
