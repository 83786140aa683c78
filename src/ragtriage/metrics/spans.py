"""The span measures' SQL (dataset unit ``span``, docs/spans.md): per case, the union of the top-k results' spans
against the union of the relevant evidence spans, each a set of disjoint intervals per document (gaps and islands:
sorted by start, a running max of end opens a new island where a span starts after every earlier one ended), so
overlapping chunks and overlapping evidence count each character once. Plain SQL that ``spark/dialect.py``
transpiles like the rest of the engine."""

from __future__ import annotations

from ragtriage.contract.relevance import is_relevant, overlap, spans_of


def islands(rows: str) -> str:
    """Disjoint intervals ``(case_id, d, s, e)`` covering the spans of ``rows`` (a relation of ``unit_id`` span
    units with ``case_id``), per case and document."""
    before = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
    return f"""SELECT case_id, d, min(s) AS s, max(e) AS e FROM (
                 SELECT case_id, d, s, e, sum(CASE WHEN s <= reach THEN 0 ELSE 1 END)
                        OVER (PARTITION BY case_id, d ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
                 FROM (SELECT case_id, d, s, e, max(e) OVER (PARTITION BY case_id, d ORDER BY s, e {before}) AS reach
                       FROM {spans_of(rows)} x0) x1) x2
               GROUP BY case_id, d, island"""


def span_cover(k: int, r: int, *, lists: str = "lr", evidence: str = "ev") -> str:
    """Per case of ``n`` (the evaluated cases): ``ev`` the evidence characters (spans of ``evidence`` relevant at
    ``r``), ``ret`` the characters of the union of the spans at positions <= ``k`` of ``lists`` (case_id, unit_id,
    pos), ``inter`` the characters in both."""
    ev = islands(f"(SELECT case_id, unit_id FROM {evidence} WHERE {is_relevant('grade', r)})")
    ret = islands(f"(SELECT case_id, unit_id FROM {lists} WHERE pos <= {int(k)})")
    return f"""SELECT n.case_id, coalesce(ve.len, 0) AS ev, coalesce(vr.len, 0) AS ret, coalesce(vi.len, 0) AS inter
               FROM n
               LEFT JOIN (SELECT case_id, sum(e - s) AS len FROM ({ev}) GROUP BY case_id) ve USING (case_id)
               LEFT JOIN (SELECT case_id, sum(e - s) AS len FROM ({ret}) GROUP BY case_id) vr USING (case_id)
               LEFT JOIN (SELECT a.case_id, sum({overlap("a", "b")}) AS len FROM ({ret}) a JOIN ({ev}) b
                          ON a.case_id = b.case_id AND a.d = b.d AND a.s < b.e AND b.s < a.e
                          GROUP BY a.case_id) vi USING (case_id)"""
