"""Pooling: the units several runs put in their top ``depth``, merged by unit, minus what is already judged.

Pooling is how TREC-style test collections grow: judge what the systems under test actually retrieve, so that
their metrics are not computed over unjudged (silently irrelevant) units. Each list is first de-duplicated the
way evaluation reads it (first occurrence of a unit wins, positions renumbered), so ``depth`` means the same
thing as the ``k`` of the metrics. Judged means judged by a person: a unit only an LLM judge graded
(``ragtriage judge``) stays in the pool.

Each pool row carries what an annotator needs on one line: the query, the passage (the unit's text from the
corpus snapshot, else the run's snippet), the previous and next chunk of the same document by manifest
position, and the rubric; ``grade``, ``annotator`` and ``note`` are left empty for the annotator to fill.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.annotate.versions import dataset_row
from ragtriage.contract.relevance import is_human
from ragtriage.contract.staging import sql_str
from ragtriage.csv_out import write_csv, write_csv_batches
from ragtriage.paths import written_whole
from ragtriage.store.connection import current_dataset_version, require_run
from ragtriage.store.dedup import positions_within

_RUN_ROWS = """SELECT run_id, case_id, unit_id, document_id, chunk_id, snippet, rank
               FROM results WHERE list_contains($runs, run_id) AND stage = $stage"""

_POOL_SQL = f"""
WITH positioned AS (
    {{positioned}}
), merged AS (
    SELECT case_id, unit_id,
           arg_min(document_id, position) AS document_id, arg_min(chunk_id, position) AS chunk_id,
           arg_min(snippet, position) AS snippet, min(position) AS best_rank,
           string_agg(DISTINCT run_id, ',' ORDER BY run_id) AS runs
    FROM positioned
    GROUP BY case_id, unit_id
)
SELECT m.*, EXISTS (SELECT 1 FROM labels l WHERE l.case_id = m.case_id AND l.unit_id = m.unit_id
                   AND {is_human("l.annotator")}) AS judged
FROM merged m
"""

_CONTEXT_SQL = """
WITH pool AS ({pool}), unjudged AS (
    SELECT * FROM pool WHERE NOT judged
), docs AS (
    SELECT d.*, lag(d.text) OVER w AS context_before, lead(d.text) OVER w AS context_after
    FROM documents d
    WINDOW w AS (PARTITION BY d.document_id ORDER BY d.position)
), whole AS (
    SELECT document_id, any_value(title ORDER BY position) AS title,
           string_agg(text, chr(10) || chr(10) ORDER BY position) AS text
    FROM documents GROUP BY document_id
), passage AS (
    -- The unit's own row: the chunk the run returned when it is in the snapshot, else the unit's first row.
    SELECT u.case_id, u.unit_id, d.section_id, d.title, d.text, d.context_before, d.context_after,
           d.chunk_id = u.chunk_id AS exact
    FROM unjudged u JOIN docs d ON d.unit_id = u.unit_id
    QUALIFY row_number() OVER (PARTITION BY u.case_id, u.unit_id
                               ORDER BY (d.chunk_id = u.chunk_id) DESC NULLS LAST, d.position) = 1
)
SELECT u.case_id, c.query, u.unit_id, u.document_id, u.chunk_id, p.section_id,
       coalesce(p.title, w.title) AS title,
       CASE WHEN $unit = 'document' AND NOT coalesce(p.exact, FALSE) THEN coalesce(w.text, u.snippet)
            ELSE coalesce(p.text, u.snippet) END AS text,
       CASE WHEN $unit = 'document' AND NOT coalesce(p.exact, FALSE) THEN NULL ELSE p.context_before END
           AS context_before,
       CASE WHEN $unit = 'document' AND NOT coalesce(p.exact, FALSE) THEN NULL ELSE p.context_after END
           AS context_after,
       u.runs, u.best_rank, $rubric AS rubric,
       CAST(NULL AS INTEGER) AS grade, CAST(NULL AS VARCHAR) AS annotator, CAST(NULL AS VARCHAR) AS note
FROM unjudged u
JOIN cases c USING (case_id)
LEFT JOIN passage p USING (case_id, unit_id)
LEFT JOIN whole w ON w.document_id = u.document_id
ORDER BY u.case_id, u.best_rank, u.unit_id
"""


def pool_relation(cur: duckdb.DuckDBPyConnection, runs: list[str], depth: int, stage: str) -> str:
    """SQL (parameters $runs, $stage) of every pooled (case, unit) with a ``judged`` flag, to run on ``cur``: the
    lists that need numbering are numbered first, into temporary tables of ``cur`` (``store.dedup``)."""
    rows: dict[str, object] = {"runs": runs, "stage": stage}
    positioned = positions_within(cur, _RUN_ROWS, rows, "run_id, case_id", depth, position="position", name="_pool")
    return _POOL_SQL.format(positioned=positioned)


class PoolTally:
    """Rows and cases of a pool as it streams past (:meth:`through`); the pool is ordered by case, so a case
    split over two batches is counted once."""

    def __init__(self) -> None:
        self.rows = 0
        self.cases = 0
        self._last: str | None = None

    def through(self, batches: pa.RecordBatchReader) -> pa.RecordBatchReader:
        def counted() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                ids = batch.column("case_id")
                if len(ids):
                    self.rows += len(ids)
                    self.cases += pc.count_distinct(ids).as_py() - (ids[0].as_py() == self._last)
                    self._last = ids[-1].as_py()
                yield batch

        return pa.RecordBatchReader.from_batches(batches.schema, counted())


def rubric_text(rubric: dict[str, str]) -> str:
    """``0 = irrelevant; 1 = related; ...`` ordered by grade, so it reads the same in CSV and JSONL."""
    items = sorted(rubric.items(), key=lambda kv: (int(kv[0]) if kv[0].lstrip("-").isdigit() else 0, kv[0]))
    return "; ".join(f"{k} = {v}" for k, v in items)


def build_pool(con: duckdb.DuckDBPyConnection, runs: list[str], depth: int = 10, *, stage: str = "final") -> pa.Table:
    """The unjudged pool of ``runs`` at ``depth`` for the current dataset version, one row per (case, unit)."""
    with con.cursor() as cur:  # DuckDB 2 refuses .sql() on a connection holding an unfinished execute() result
        return pool_batches(cur, runs, depth, stage=stage).read_all()


def pool_batches(
    cur: duckdb.DuckDBPyConnection, runs: list[str], depth: int = 10, *, stage: str = "final"
) -> pa.RecordBatchReader:
    """:func:`build_pool` as a stream of batches read from ``cur`` (a cursor the caller closes after reading),
    so a large pool is written without being held whole beside the query."""
    if not runs:
        raise ValueError("no runs given; pass --runs a,b,c")
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    for run in runs:
        require_run(cur, run)
    ds = dataset_row(cur, current_dataset_version(cur))
    sql = _CONTEXT_SQL.format(pool=pool_relation(cur, runs, depth, stage))
    params = {"runs": runs, "stage": stage, "unit": ds.unit, "rubric": rubric_text(ds.rubric)}
    return cur.sql(sql, params=params).to_arrow_reader()


def write_pool(con: duckdb.DuckDBPyConnection, table: pa.Table | pa.RecordBatchReader, out: str | Path) -> str:
    """Write the pool (a table, or :func:`pool_batches` read once) as CSV or JSONL (chosen by the extension);
    returns the format written. A pool streamed to its file is written beside it and renamed once whole: a
    failure part-way (an error, Ctrl-C) leaves no shorter file that looks like a pool to hand to annotators."""
    path = Path(out)
    fmt = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: write the pool to a .csv or .jsonl file")
    with written_whole(path) as partial:
        if fmt == "csv":
            # annotators open this file in a spreadsheet: the one CSV writer (import-labels undoes its apostrophes)
            if isinstance(table, pa.RecordBatchReader):
                write_csv_batches(table, partial)
            else:
                write_csv(table, partial)
        else:
            con.register("_annotate_pool_out", table)
            try:
                con.execute(f"COPY (SELECT * FROM _annotate_pool_out) TO {sql_str(str(partial))} (FORMAT json)")
            finally:
                con.unregister("_annotate_pool_out")
    return fmt
