"""Bench data in three shapes, written by DuckDB in the layout every bench reads.

    from data_shapes import generate, SHAPES
    layout = generate(Path("/tmp/x"), 10_000_000, "realistic")   # or "regular", "chunks"

Layout under ``root`` (the one bench/scale_bench.py has always used):

- ``dataset/`` (``dataset.json``, ``cases.parquet``, ``labels.parquet``) and ``run-a/``, ``run-b/``
  (``run.json``, ``results.parquet``): the contract's Parquet form, for ``ragtriage load``;
- ``qrels.txt`` and ``run-a.txt``: the same labels and run-a as TREC text, for trec_eval, pytrec_eval, ir_measures
  and ``ragtriage metrics --qrels --run``;
- realistic only: ``run-a-unique.txt``, run-a without its repeated documents (the lowest rank of each kept), for
  programs that refuse them (trec_eval stops at a document listed twice for one query); ``qrels-repeats.txt``,
  the qrels with one judgment in 200 repeated as an identical line. ragtriage and trec_eval both refuse a repeated
  judgment (fail closed), so ``qrels.txt`` and ``labels.parquet`` hold none and a bench times the refusal of
  ``qrels-repeats.txt`` on its own.

``realistic`` looks like a real run: queries of uneven depth (10 to 280 results, skewed to short lists, mean about
100), document ids drawn from a million (``d004217``), real-valued scores rounded to 2 decimals so lists hold ties,
one list in 200 repeating one of its documents (a second line, a lower score), judgments pooled from the top 30 of
the run (about 12% judged, grades 0-3) plus one relevant document per query the run never lists (one judgment in
200 repeated in ``qrels-repeats.txt``). Every draw is a hash of the row's position, so the same ``rows`` always gives
the same bytes.

``regular`` is the older synthetic shape: every query 100 results, document ids ``d0, d2, d4, …`` in a window of 300
around the query, integer scores, no repeat, 5 labels per query. It stays as a second case; a fast path that only
this shape takes is not a speed-up.

``chunks`` is a document-unit dataset loaded from chunk-level runs: the realistic shape's uneven depth and scores,
but each list returns several chunks (``d004217#3``) of each document it retrieves, so almost every list repeats a
document and is de-duplicated by windows (``store.dedup``); judgments are of documents, pooled from the top 30.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

SHAPES = ("realistic", "regular", "chunks")
THRESHOLD = 1
REGULAR_DEPTH = 100
REGULAR_LABELS = 5
MAX_DEPTH = 280  # realistic: depth = 10 + 270 u^2, mean 100
MEAN_DEPTH = 100
REPEAT_EVERY = 200  # one list in 200 repeats a document; one judgment in 200 is a repeated line
CHUNKS_PER_DOCUMENT = 4  # chunks: each retrieved document's chunks sit at four neighbouring positions


def describe(shape: str) -> str:
    """One sentence stating the shape, for a results file's notes."""
    if shape == "realistic":
        return (
            "Realistic shape (bench/data_shapes.py): queries of uneven depth 10-280 (mean ~100), document ids "
            "drawn from a million, real-valued scores rounded to 2 decimals (ties), one list in 200 repeating a "
            "document, qrels pooled from the top 30 (~12% judged, grades 0-3) plus one unlisted relevant document "
            "per query; one judgment in 200 repeated as an identical line in qrels-repeats.txt only (ragtriage and "
            "trec_eval refuse repeated judgments), run-a-unique.txt without the repeated documents (for trec_eval)."
        )
    if shape == "chunks":
        return (
            "Chunks shape (bench/data_shapes.py): a document-unit dataset loaded from chunk-level runs; the realistic "
            f"shape's uneven depth and scores, but each retrieved document returns {CHUNKS_PER_DOCUMENT} of its "
            "chunks, so almost every list repeats a document (de-duplicated by windows); document judgments pooled "
            "from the top 30 plus one unlisted relevant document per query."
        )
    return (
        "Regular shape (bench/data_shapes.py): every query 100 results, document ids d0, d2, d4, ... in a window "
        "of 300, integer scores, no repeats, 5 labels per query (grades 1-3)."
    )


@dataclass(frozen=True)
class Layout:
    root: Path
    shape: str
    run_lines: int
    qrels_lines: int
    cases: int

    @property
    def dataset(self) -> Path:
        return self.root / "dataset"

    def run_dir(self, name: str = "run-a") -> Path:
        return self.root / name

    @property
    def qrels(self) -> Path:
        return self.root / "qrels.txt"

    @property
    def run(self) -> Path:
        return self.root / "run-a.txt"

    @property
    def unique_run(self) -> Path:
        """run-a for a program refusing a document listed twice (the same file when the shape has no repeat)."""
        path = self.root / "run-a-unique.txt"
        return path if path.exists() else self.run

    @property
    def repeated_qrels(self) -> Path | None:
        """The qrels with repeated judgments, which ragtriage and trec_eval refuse; None when the shape has none."""
        path = self.root / "qrels-repeats.txt"
        return path if path.exists() else None

    def summary(self) -> dict[str, object]:
        return {"shape": self.shape, "run_lines": self.run_lines, "qrels_lines": self.qrels_lines, "cases": self.cases}


def generate(root: Path, rows: int, shape: str = "realistic") -> Layout:
    """Write about ``rows`` result rows per run in ``shape`` under ``root`` (created); returns where they are."""
    import duckdb

    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
    ds = root / "dataset"
    for folder in (ds, root / "run-a", root / "run-b", root / "tmp"):
        folder.mkdir(parents=True, exist_ok=True)
    (ds / "dataset.json").write_text(
        json.dumps({"name": f"bench-{shape}", "version": "1", "unit": "document", "relevance_threshold": THRESHOLD})
    )
    con = duckdb.connect()
    con.execute(f"SET temp_directory='{root / 'tmp'}'")
    con.execute("SET enable_progress_bar = false")
    {"realistic": _realistic, "regular": _regular, "chunks": _chunks}[shape](con, root, rows)
    depth = REGULAR_DEPTH if shape == "regular" else MAX_DEPTH + 1
    for run in ("run-a", "run-b"):
        (root / run / "run.json").write_text(json.dumps({"run_id": run, "k": 10, "candidate_k": depth}))
    con.execute(f"""COPY (SELECT case_id, 0, document_id, grade FROM '{ds / "labels.parquet"}')
                    TO '{root / "qrels.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false)""")
    trec_run = "SELECT case_id, 'Q0', document_id, rank, score, 'a' FROM '{}'"
    con.execute(f"""COPY ({trec_run.format(root / "run-a" / "results.parquet")})
                    TO '{root / "run-a.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false)""")
    if shape == "realistic":
        _unique_copies(con, root)
    counts = con.execute(f"""SELECT (SELECT count(*) FROM '{root / "run-a" / "results.parquet"}'),
                                    (SELECT count(*) FROM '{ds / "labels.parquet"}'),
                                    (SELECT count(*) FROM '{ds / "cases.parquet"}')""").fetchone()
    con.close()
    assert counts is not None
    return Layout(root, shape, int(counts[0]), int(counts[1]), int(counts[2]))


def _regular(con: duckdb.DuckDBPyConnection, root: Path, rows: int) -> None:
    ds = root / "dataset"
    cases = rows // REGULAR_DEPTH
    con.execute(f"""COPY (SELECT 'q' || i AS id, 'query ' || i AS query FROM range({cases}) t(i))
                    TO '{ds / "cases.parquet"}' (FORMAT parquet)""")
    # five labels per case on documents hashed into a 300-document window around the case's list, grades 1..3
    con.execute(f"""COPY (SELECT DISTINCT ON (case_id, document_id) * FROM (
                        SELECT 'q' || (i // {REGULAR_LABELS}) AS case_id,
                               'd' || ((i // {REGULAR_LABELS}) * 7 + hash(i) % 300) AS document_id,
                               CAST(1 + hash(i * 31) % 3 AS INTEGER) AS grade
                        FROM range({cases * REGULAR_LABELS}) t(i)))
                    TO '{ds / "labels.parquet"}' (FORMAT parquet)""")
    for n, run in enumerate(("run-a", "run-b")):
        con.execute(f"""COPY (SELECT 'q' || (i // {REGULAR_DEPTH}) AS case_id, 'final' AS stage,
                               CAST(i % {REGULAR_DEPTH} + 1 AS INTEGER) AS rank,
                               'd' || ((i // {REGULAR_DEPTH}) * 7 + ((i % {REGULAR_DEPTH}) * {2 + n}) % 300)
                                   AS document_id,
                               1000.0 - (i % {REGULAR_DEPTH}) AS score
                        FROM range({cases * REGULAR_DEPTH}) t(i))
                        TO '{root / run / "results.parquet"}' (FORMAT parquet)""")


def _queries(con: duckdb.DuckDBPyConnection, ds: Path, rows: int) -> None:
    """The draw macros, table ``q`` (c, qid, depth: uneven, mean about 100) and ``cases.parquet``."""
    cases = max(1, rows // MEAN_DEPTH)
    # u(x, s): a uniform draw in [0, 1) from a hash of the row's position and a stream number
    con.execute("CREATE MACRO u(x, s) AS CAST(hash(x, s) % 1000003 AS DOUBLE) / 1000003")
    con.execute("CREATE MACRO doc(x, s) AS 'd' || lpad(CAST(CAST(floor(u(x, s) * 1e6) AS BIGINT) AS VARCHAR), 6, '0')")
    con.execute(f"""CREATE TABLE q AS SELECT i AS c, 'q' || (100000 + i) AS qid,
                           CAST(10 + floor({MAX_DEPTH - 10} * pow(u(i, 1), 2)) AS INT) AS depth
                    FROM range({cases}) t(i)""")
    con.execute(f"""COPY (SELECT qid AS id, 'query ' || c AS query FROM q ORDER BY c)
                    TO '{ds / "cases.parquet"}' (FORMAT parquet)""")


def _pooled_labels(con: duckdb.DuckDBPyConnection, ds: Path) -> None:
    """Table ``l`` and ``labels.parquet``: judgments pooled from the first run's top 30 (table ``r``), plus one
    relevant document per query that no run lists."""
    con.execute("""CREATE TABLE l AS SELECT DISTINCT ON (c, docno) * FROM (
        SELECT c, qid, docno, CAST(floor(u(c * 1000 + k, 8) * 4) AS INTEGER) AS grade
        FROM r WHERE k < 30 AND u(c * 1000 + k, 7) < 0.12
        UNION ALL SELECT c, qid, doc(c, 9), CAST(1 + floor(u(c, 10) * 3) AS INTEGER) FROM q)""")
    con.execute(f"""COPY (SELECT qid AS case_id, docno AS document_id, grade FROM l ORDER BY c, document_id)
                    TO '{ds / "labels.parquet"}' (FORMAT parquet)""")


def _realistic(con: duckdb.DuckDBPyConnection, root: Path, rows: int) -> None:
    ds = root / "dataset"
    _queries(con, ds, rows)
    for n, run in enumerate(("run-a", "run-b")):
        s = 10 * n  # each run its own draws
        con.execute(f"""CREATE OR REPLACE TABLE r AS
            WITH drawn AS (SELECT c, qid, depth, k, doc(c * 1000 + k, 2 + {s}) AS docno,
                                  round(10 * exp(-k / 40.0) + u(c * 1000 + k, 3 + {s}) * 0.5, 2) AS score
                           FROM (SELECT c, qid, depth, unnest(range(depth)) AS k FROM q))
            SELECT * FROM drawn QUALIFY row_number() OVER (PARTITION BY c, docno ORDER BY k) = 1""")
        # one list in 200: one of its documents a second time, at a score drawn for another position
        con.execute(f"""INSERT INTO r
            SELECT r.c, r.qid, r.depth, 1000 + r.k, r.docno,
                   round(10 * exp(-floor(u(r.c, 5 + {s}) * r.depth) / 40.0) + u(r.c, 6 + {s}) * 0.5, 2)
            FROM r WHERE r.c % {REPEAT_EVERY} = {REPEAT_EVERY // 2} AND r.k = floor(u(r.c, 4 + {s}) * r.depth)""")
        con.execute(f"""COPY (SELECT qid AS case_id, 'final' AS stage,
                                     CAST(row_number() OVER (PARTITION BY c ORDER BY score DESC, docno DESC, k)
                                          AS INTEGER) AS rank,
                                     docno AS document_id, score
                              FROM r ORDER BY c, rank)
                        TO '{root / run / "results.parquet"}' (FORMAT parquet)""")
        if n == 0:
            _pooled_labels(con, ds)
    con.execute(f"""COPY (SELECT qid, 0, docno, grade FROM (
                              SELECT * FROM l UNION ALL SELECT * FROM l WHERE hash(c, docno) % {REPEAT_EVERY} = 0)
                          ORDER BY c, docno)
                    TO '{root / "qrels-repeats.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false)""")


def _chunks(con: duckdb.DuckDBPyConnection, root: Path, rows: int) -> None:
    ds = root / "dataset"
    _queries(con, ds, rows)
    n_chunks = CHUNKS_PER_DOCUMENT
    for n, run in enumerate(("run-a", "run-b")):
        s = 10 * n
        # position k shows chunk (k mod 4) + 4j of the document drawn for its group k // 4; scores with noise, so
        # the chunks of one document interleave with others' once ranked
        con.execute(f"""CREATE OR REPLACE TABLE r AS
            WITH drawn AS (SELECT c, qid, k, doc(c * 1000 + k // {n_chunks}, 2 + {s}) AS docno,
                                  k % {n_chunks} + {n_chunks} * floor(u(c * 1000 + k // {n_chunks}, 11 + {s}) * 5)
                                      AS part,
                                  round(10 * exp(-k / 40.0) + u(c * 1000 + k, 3 + {s}) * 0.5, 2) AS score
                           FROM (SELECT c, qid, unnest(range(depth)) AS k FROM q))
            SELECT *, docno || '#' || CAST(part AS BIGINT) AS chunk FROM drawn
            QUALIFY row_number() OVER (PARTITION BY c, docno, part ORDER BY k) = 1""")
        con.execute(f"""COPY (SELECT qid AS case_id, 'final' AS stage,
                                     CAST(row_number() OVER (PARTITION BY c ORDER BY score DESC, chunk DESC, k)
                                          AS INTEGER) AS rank,
                                     docno AS document_id, chunk AS chunk_id, score
                              FROM r ORDER BY c, rank)
                        TO '{root / run / "results.parquet"}' (FORMAT parquet)""")
        if n == 0:
            _pooled_labels(con, ds)


def _unique_copies(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """run-a as TREC text without repeats: the lowest rank of each (query, document) kept, in file order."""
    results = root / "run-a" / "results.parquet"
    con.execute(f"""COPY (SELECT case_id, 'Q0', document_id, rank, score, 'a' FROM '{results}'
                          QUALIFY row_number() OVER (PARTITION BY case_id, document_id ORDER BY rank) = 1
                          ORDER BY case_id, rank)
                    TO '{root / "run-a-unique.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false)""")
