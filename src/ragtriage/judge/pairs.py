"""Which (query, unit text) pairs the judge grades: the unjudged pool of runs (the very pool `ragtriage pool`
writes), a file of pairs, or a seeded sample of units people already graded (calibration).

Every source gives the same columns (:data:`PAIR_COLUMNS`); a pair without text (a unit missing from the corpus
snapshot and returned without a snippet) cannot be graded and is counted, not sent.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.annotate.agreement import UNIT_TEXT
from ragtriage.annotate.pool import build_pool
from ragtriage.contract.relevance import is_human
from ragtriage.contract.staging import sql_str
from ragtriage.csv_out import restore_sql

PAIR_COLUMNS = ["case_id", "query", "unit_id", "document_id", "chunk_id", "section_id", "text", "human_grade"]


def _shaped(t: pa.Table) -> pa.Table:
    if "human_grade" not in t.column_names:
        t = t.append_column("human_grade", pa.nulls(t.num_rows, pa.int32()))
    return t.select(PAIR_COLUMNS)


def pool_pairs(con: duckdb.DuckDBPyConnection, runs: list[str], depth: int, stage: str = "final") -> pa.Table:
    """The unjudged units of ``runs``' top ``depth``: ``annotate.build_pool``, the pool annotators get."""
    return _shaped(build_pool(con, runs, depth, stage=stage))


_LABELLED = f"""
WITH unit_text AS ({UNIT_TEXT}),
lab AS (SELECT case_id, unit_id, arg_min(document_id, line) AS document_id, arg_min(chunk_id, line) AS chunk_id,
               arg_min(section_id, line) AS section_id
        FROM labels WHERE {is_human()} GROUP BY case_id, unit_id)
SELECT q.case_id, c.query, q.unit_id, lab.document_id, lab.chunk_id, lab.section_id, t.text,
       q.grade AS human_grade,
       row_number() OVER (PARTITION BY q.grade ORDER BY md5(q.case_id || chr(0) || q.unit_id || chr(0) || $seed))
           AS draw
FROM qrels q JOIN cases c USING (case_id) JOIN lab USING (case_id, unit_id) JOIN unit_text t USING (unit_id)
WHERE coalesce(t.text, '') <> ''
"""


def quotas(counts: dict[int, int], n: int) -> dict[int, int]:
    """``n`` draws spread as evenly as the grades allow: each grade gets an equal share, a grade with fewer units
    gives all it has and the rest is shared among the others (lower grades first for a remainder)."""
    left = dict(counts)
    out = dict.fromkeys(counts, 0)
    todo = min(n, sum(counts.values()))
    while todo > 0:
        open_ = sorted(g for g, c in left.items() if c > 0)
        share, extra = divmod(todo, len(open_))
        for i, g in enumerate(open_):
            take = min(left[g], share + (1 if i < extra else 0))
            out[g] += take
            left[g] -= take
            todo -= take
    return out


def calibration_pairs(con: duckdb.DuckDBPyConnection, n: int, seed: int = 0) -> pa.Table:
    """``n`` units people graded, stratified by their effective grade and drawn by a seeded hash (the same ``n``
    and ``seed`` on the same labels give the same units)."""
    if n < 1:
        raise ValueError(f"--calibrate {n}: give the number of labelled units to grade, e.g. 200")
    with con.cursor() as cur:
        every = cur.sql(_LABELLED, params={"seed": str(seed)}).to_arrow_table()
    if every.num_rows == 0:
        raise ValueError("no labelled unit has text in the corpus snapshot: calibration needs both")
    grades = every.column("human_grade").to_numpy()
    values, counts = np.unique(grades, return_counts=True)
    quota = quotas({int(g): int(c) for g, c in zip(values, counts, strict=True)}, n)
    limit = np.array([quota[int(g)] for g in grades])
    keep = every.column("draw").to_numpy() <= limit
    chosen = every.filter(pa.array(keep)).sort_by([("human_grade", "ascending"), ("draw", "ascending")])
    return _shaped(chosen.drop_columns(["draw"]))


_FILE_SQL = """
WITH f AS (SELECT {case} AS case_id, {unit} AS unit_id{text} FROM {reader}),
unit_text AS ({unit_text}),
doc AS (SELECT unit_id, arg_min(document_id, position) AS document_id, arg_min(chunk_id, position) AS chunk_id,
               arg_min(section_id, position) AS section_id FROM documents GROUP BY unit_id)
SELECT f.case_id, c.query, f.unit_id, d.document_id, d.chunk_id, d.section_id, {text_expr} AS text,
       CAST(NULL AS INTEGER) AS human_grade, c.case_id IS NULL AS unknown_case, d.unit_id IS NULL AS unknown_unit
FROM f LEFT JOIN cases c USING (case_id) LEFT JOIN doc d USING (unit_id) LEFT JOIN unit_text t USING (unit_id)
"""


def file_pairs(con: duckdb.DuckDBPyConnection, path: str | Path) -> pa.Table:
    """Pairs listed in a CSV or JSONL file with ``case_id`` and ``unit_id`` columns (a pool file qualifies); the
    query comes from the cases, the text from the file's ``text`` column when it has one, else the corpus."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise ValueError(f"{p}: give the pairs as a .csv or .jsonl file with case_id and unit_id columns")
    if not p.is_file():
        raise ValueError(f"{p}: no such file")
    csv = suffix == ".csv"
    reader = (
        f"read_csv({sql_str(str(p))}, all_varchar = true, header = true)"
        if csv
        else f"read_json({sql_str(str(p))}, format = 'newline_delimited')"
    )
    cur = con.cursor()
    try:
        cols = [r[0] for r in cur.execute(f"DESCRIBE SELECT * FROM {reader}").fetchall()]
        missing = [c for c in ("case_id", "unit_id") if c not in cols]
        if missing:
            raise ValueError(f"{p}: no column {', '.join(missing)}; the pairs file needs case_id and unit_id")

        def cell(c: str) -> str:  # a CSV this tool wrote apostrophe-leads formula-like cells (csv_out)
            return restore_sql(f"CAST({c} AS VARCHAR)") if csv else f"CAST({c} AS VARCHAR)"

        has_text = "text" in cols
        sql = _FILE_SQL.format(
            case=cell("case_id"),
            unit=cell("unit_id"),
            text=f", {cell('text')} AS text" if has_text else "",
            reader=reader,
            unit_text=UNIT_TEXT,
            text_expr="coalesce(nullif(f.text, ''), t.text)" if has_text else "t.text",
        )
        t = cur.sql(sql).to_arrow_table()
    except duckdb.Error as exc:
        raise ValueError(f"{p}: cannot read the pairs ({exc})") from None
    finally:
        cur.close()
    for flag, what in (("unknown_case", "case_id"), ("unknown_unit", "unit_id")):
        bad = t.filter(t.column(flag))
        if bad.num_rows:
            first = bad.column(what)[0].as_py()
            raise ValueError(f"{p}: {bad.num_rows} row(s) name a {what} the store does not know, first {first!r}")
    return _shaped(t.drop_columns(["unknown_case", "unknown_unit"]))


def gradable(pairs: pa.Table) -> pa.Table:
    """The pairs that have text to grade."""
    text = pairs.column("text")
    return pairs.filter(pc.and_(pc.is_valid(text), pc.not_equal(pc.utf8_length(pc.fill_null(text, "")), 0)))
