"""TREC, BEIR and MS MARCO text formats and TREC topic files, staged into the typed tables the contract uses.

Each file is scanned once by DuckDB's CSV reader as whole lines (decompressing .gz itself, reading a scratch copy
of .bz2), split into fields in SQL, and checked with one aggregate per cause: a cause is reported once, with its
count and its first lines, however many lines share it.

TREC runs are re-ranked the way trec_eval reads them: by score descending, ties broken by docno descending; the
file's own rank column is ignored (trec_eval ignores it too), so our numbers match trec_eval's. MS MARCO runs
(``qid docno rank``) have no score: the score is 1/rank (pyserini's convention when it converts them to TREC), so
the file's rank order is kept and trec_eval on the converted file gives the same figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ragtriage.contract.errors import Cause, Finding, counted, counted_causes, has_errors
from ragtriage.contract.fields import INT_MAX
from ragtriage.contract.sniff import beir_header
from ragtriage.contract.staging import Staged, drop_staged, encoding_findings, lines_sql, read_error
from ragtriage.contract.trec_csv import TrecRun, integer_sql, read_qrels, read_run

# Lines made of single spaces (or single tabs) split with string_split; anything else goes through the regex.
_PLAIN = "NOT (contains(t, '  ') OR contains(t, chr(9)) OR contains(t, chr(13)) OR starts_with(t, ' '))"
_SPLIT = (
    f"CASE WHEN {_PLAIN} THEN string_split(t, ' ') "
    "WHEN NOT (contains(t, ' ') OR contains(t, chr(13))) THEN string_split(t, chr(9)) "
    "ELSE regexp_split_to_array(trim(t, ' ' || chr(9) || chr(13)), '\\s+') END"
)


def trec_rank(lists: str, score: str = "score", docno: str = "document_id") -> str:
    """SQL: the rank trec_eval gives each row of a list (``lists``: the columns that identify one), score
    descending then docno descending, as the load records it for a run without usable ranks (and the Spark
    engine for a run without a rank column)."""
    return f"CAST(row_number() OVER (PARTITION BY {lists} ORDER BY {score} DESC, {docno} DESC) AS BIGINT)"


CASE_COLUMNS = (
    "CAST(NULL AS BOOLEAN) AS answerable, CAST(NULL AS VARCHAR) AS expected_behavior, "
    "CAST(NULL AS VARCHAR) AS principal, CAST(NULL AS VARCHAR) AS filters, CAST(NULL AS VARCHAR) AS split, "
    "CAST(NULL AS VARCHAR) AS source_family, CAST(NULL AS VARCHAR) AS query_type, "
    "CAST(NULL AS VARCHAR) AS language, CAST(NULL AS VARCHAR[]) AS tags, CAST(NULL AS BOOLEAN) AS critical, "
    "CAST(NULL AS VARCHAR) AS expected_scope"
)
"""The optional case fields a foreign topics or qrels file lacks (``SELECT line, id, query, {CASE_COLUMNS}``)."""

LABEL_COLUMNS = (
    "CAST(NULL AS VARCHAR) AS chunk_id, CAST(NULL AS VARCHAR) AS section_id, 'default' AS annotator, "
    'CAST(NULL AS VARCHAR) AS note, CAST(NULL AS BIGINT) AS "start", CAST(NULL AS BIGINT) AS "end"'
)
RESULT_COLUMNS = (
    "CAST(NULL AS VARCHAR) AS chunk_id, CAST(NULL AS VARCHAR) AS snippet, CAST(NULL AS VARCHAR) AS metadata, "
    'CAST(NULL AS BIGINT) AS "start", CAST(NULL AS BIGINT) AS "end"'
)


@dataclass
class RunFacts:
    """What reading a run file found beyond its rows: the tags per line count, ignored extra columns, and
    whether scores were derived from ranks (MS MARCO)."""

    tags: dict[str, int] = field(default_factory=dict)
    extra_column_lines: int = 0
    score_from_rank: bool = False
    depth: int | None = None  # the longest ranked list, when the reader knows it
    base_table: str | None = None  # the table behind a staged view (what a chunk-mode load updates)


def read_raw(con: duckdb.DuckDBPyConnection, path: Path, name: str, select: Callable[[str], str]) -> list[Finding]:
    """Create ``{name}__raw`` as the query ``select`` makes of the file's lines (``lines_sql(path, "t")``), once
    the checks every text reader makes first pass (a corrupt file is never decompressed); the findings, with the
    reader's error when DuckDB cannot read the file."""
    findings = encoding_findings(path)
    if has_errors(findings):
        return findings
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name}__raw AS {select(lines_sql(path, 't'))}")
    except duckdb.Error as exc:
        return [*findings, read_error(str(path), exc)]
    return findings


def split_lines(con: duckdb.DuckDBPyConnection, path: Path, name: str, *, comments: bool = True) -> list[Finding]:
    """Create ``{name}__raw(line, p)``: the non-blank lines (and, with ``comments``, not ``#`` lines), split."""
    skip = "AND NOT starts_with(ltrim(t), '#')" if comments else ""
    return read_raw(
        con,
        path,
        name,
        lambda lines: (
            f"SELECT line, {_SPLIT} AS p FROM ({lines}) "
            f"WHERE t IS NOT NULL AND trim(t, ' ' || chr(9) || chr(13)) <> '' {skip}"
        ),
    )


def not_finite(x: str) -> str:
    """SQL: the score ``x`` (a DOUBLE) is missing, NaN or infinite: the one score rule of every reader (TREC, JSON
    dicts, DataFrames, traces), so a score one format refuses is refused by all."""
    return f"NOT coalesce(isfinite({x}), FALSE)"


def _columns(con: duckdb.DuckDBPyConnection, name: str, path: Path, layout: str) -> list[Finding]:
    """Lines of another field count than ``layout``'s, counted."""
    n = len(layout.split())
    msg = f"expected {n} columns ({layout}), found {{v}}"
    return counted(con, f"{name}__raw", f"len(p) <> {n}", "len(p)", path, None, "bad-columns", msg)


def _finish(con: duckdb.DuckDBPyConnection, name: str, path: Path, fmt: str, findings: list[Finding]) -> Staged:
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
    if rows == 0 and not has_errors(findings):
        findings.append(Finding(str(path), None, None, "empty-file", "file holds no rows"))
    con.execute(f"DROP TABLE IF EXISTS {name}__raw")
    return Staged(name, path, fmt, int(rows), findings, "line")


def _trec_split_sql(path: Path) -> str:
    """Every line of a TREC run as typed columns (``n`` = the line's field count). Blank and comment lines stay
    (``KEEP`` leaves them out later): a WHERE here made DuckDB split every line twice (the filter is pushed below
    the projection), doubling the cost of the whole read."""
    return f"""SELECT line, p[1] AS case_id, p[3] AS document_id, CAST(NULL AS VARCHAR) AS chunk_id,
                      TRY_CAST(p[5] AS DOUBLE) AS score, p[6] AS tag, len(p) AS n
               FROM (SELECT line, {_SPLIT} AS p FROM ({lines_sql(path, "t")}))"""


KEEP = "(case_id IS NOT NULL AND case_id <> '' AND NOT starts_with(case_id, '#'))"
"""A TREC line that holds data: not blank, not a ``#`` comment."""


def _in_trec_order(con: duckdb.DuckDBPyConnection, data: str, firsts: str) -> bool:
    """Whether the file already lists each query's lines together, in trec_eval's order (score descending,
    docno descending): then a line's rank is its position in its query's block. Contiguity comes from the
    per-query line range; the order from each line's predecessor (a streaming window over the table scan): its
    score first, and the docnos (a second, costlier pass) only when some query repeats a score."""
    contiguous = con.execute(f"SELECT coalesce(bool_and(last - first + 1 = n), TRUE) FROM {firsts}").fetchall()[0][0]
    if not contiguous:
        return False
    prev = "lag({0}) OVER ()"
    same = f"case_id = {prev.format('case_id')}"
    rising, ties = con.execute(
        f"""SELECT count(*) FILTER (WHERE same AND score > before), count(*) FILTER (WHERE same AND score = before)
            FROM (SELECT {same} AS same, score, {prev.format("score")} AS before FROM {data})"""
    ).fetchall()[0]
    if rising or not ties:
        return not rising
    broken = con.execute(
        f"""SELECT count(*) FROM (
                SELECT {same} AND NOT (score < {prev.format("score")}
                       OR (score = {prev.format("score")} AND document_id < {prev.format("document_id")})) AS bad
                FROM {data}) WHERE bad"""
    ).fetchall()[0][0]
    return not broken


def stage_trec_run(
    con: duckdb.DuckDBPyConnection, path: Path, name: str, *, by_tag: bool = False
) -> tuple[Staged, RunFacts]:
    """Stage ``qid Q0 docno rank score tag`` lines as final-stage results (columns after the sixth are ignored
    and counted). ``by_tag`` ranks each tag's lines apart, for loading one run per tag.

    The lines are read once into ``{name}__split`` (the table a chunk-mode load updates): by DuckDB's CSV reader
    when every line is six single-space (or single-tab) separated fields and every score a finite number
    (``contract/trec_csv.py``), else split in SQL, which finds every bad line. ``{name}`` is a view adding the
    rank, which the loader computes while writing. A file already in trec_eval's order with each query's lines
    together (what most systems write) is ranked by position, through a join with each query's first line; any
    other file by a sort over (query, score desc, docno desc)."""
    facts = RunFacts()
    split = f"{name}__split"
    findings = encoding_findings(path)
    drop_staged(con, name)
    if has_errors(findings):
        return Staged(name, path, "trec", 0, findings, "line"), facts
    facts.base_table = split
    read = None if findings else read_run(con, path, split)
    if read is not None:
        # Read by the CSV reader: six fields and a finite score on every line, so nothing to report.
        cols = "case_id, document_id, chunk_id, score, tag"
        data = f"(SELECT rowid - {read.first} + 1 AS line, {cols}, 6 AS n FROM {split})"  # comments are gone
        return _rank_trec_run(con, path, name, data, by_tag, findings, facts, read)
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {split} AS {_trec_split_sql(path)}")
    except duckdb.Error as exc:
        return Staged(name, path, "trec", 0, [*findings, read_error(str(path), exc)], "line"), facts
    data = f"(SELECT * FROM {split} WHERE {KEEP})"
    findings += counted_causes(
        con,
        data,
        path,
        [
            Cause("n < 6", "n", None, "bad-columns", "expected 6 columns (qid Q0 docno rank score tag), found {v}"),
            Cause(f"n >= 6 AND {not_finite('score')}", "line", "score", "bad-score",
                  "score {v} is not a finite number"),
            Cause("n > 6", "n", None, "extra-columns",
                  "{v} columns where TREC has 6; the columns after the sixth (tag) were ignored", "warning"),
        ],
    )  # fmt: skip
    findings = [_score_text(con, path, f) if f.code == "bad-score" else f for f in findings]
    facts.extra_column_lines = next((f.count for f in findings if f.code == "extra-columns"), 0)
    return _rank_trec_run(con, path, name, data, by_tag, findings, facts)


def _rank_trec_run(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    name: str,
    data: str,
    by_tag: bool,
    findings: list[Finding],
    facts: RunFacts,
    read: TrecRun | None = None,
) -> tuple[Staged, RunFacts]:
    """The view ``name`` over the read lines ``data`` (line, case_id, document_id, chunk_id, score, tag, n), with
    the rank; the per-query ranges give the row count, the depth and the tags (``read`` brings them from the
    CSV reader's pass when ranking per query)."""
    key = "tag, case_id" if by_tag else "case_id"
    if read is not None and not by_tag:
        firsts = read.cases
        rows, depth = con.execute(f"SELECT sum(n), max(n) FROM {firsts}").fetchall()[0]
        one_tag, tag = read.tag is not None, read.tag
    else:
        firsts = f"{name}__first"
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE {firsts} AS
                SELECT {key}, min(line) AS first, max(line) AS last, count(*) AS n, min(tag) AS tag_lo,
                       max(tag) AS tag_hi
                FROM {data} GROUP BY {key}"""
        )
        rows, depth, one_tag, tag = con.execute(
            f"SELECT coalesce(sum(n), 0), coalesce(max(n), 0), min(tag_lo) = max(tag_hi), min(tag_lo) FROM {firsts}"
        ).fetchall()[0]
    facts.depth = int(depth)
    if rows == 0 and not has_errors(findings):
        findings.append(Finding(str(path), None, None, "empty-file", "file holds no rows"))
    cols = 'line, case_id, \'final\' AS stage, document_id, chunk_id, score, snippet, metadata, tag, "start", "end"'
    nulls = RESULT_COLUMNS.removeprefix("CAST(NULL AS VARCHAR) AS chunk_id, ")
    if not by_tag and not has_errors(findings) and _in_trec_order(con, data, firsts):
        con.execute(
            f"""CREATE TEMP VIEW {name} AS SELECT {cols}, CAST(line - f.first + 1 AS BIGINT) AS rank
                FROM (SELECT s.*, {nulls} FROM {data} s) JOIN {firsts} f USING (case_id)"""
        )
    else:
        con.execute(
            f"""CREATE TEMP VIEW {name} AS SELECT {cols}, {trec_rank(key)} AS rank
                FROM (SELECT s.*, {nulls} FROM {data} s)"""
        )
    # one tag (the usual case) is known from the per-query ranges; only a file with several is grouped by tag
    facts.tags = {str(tag): int(rows)} if one_tag else tag_counts(con, data)
    return Staged(name, path, "trec", int(rows), findings, "line"), facts


def _score_text(con: duckdb.DuckDBPyConnection, path: Path, f: Finding) -> Finding:
    """The bad score's text as written (read again from the file, on this error path only)."""
    row = con.execute(f"SELECT ({_SPLIT})[5] FROM ({lines_sql(path, 't')}) WHERE line = {int(f.line or 0)}").fetchall()
    text = repr(row[0][0]) if row else "?"
    return Finding(f.file, f.line, f.field, f.code, f.message.replace(str(f.line), text, 1), f.severity, f.count,
                   f.lines)  # fmt: skip


def stage_msmarco_run(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> tuple[Staged, RunFacts]:
    """Stage ``qid<TAB>docno<TAB>rank`` lines; the score is 1/rank, so the file's order is the ranking."""
    facts = RunFacts(score_from_rank=True)
    findings = split_lines(con, path, name)
    if has_errors(findings):
        return Staged(name, path, "msmarco", 0, findings, "line"), facts
    findings += _columns(con, name, path, "qid docno rank")
    rank = integer_sql("p[3]")
    findings += counted_causes(
        con,
        f"{name}__raw",
        path,
        [
            Cause(f"len(p) = 3 AND ({rank} IS NULL OR {rank} < 1)", "p[3]", "rank", "bad-rank",
                  "rank {v} is not a whole number >= 1"),
            Cause(f"len(p) = 3 AND {rank} > {INT_MAX}", "p[3]", "rank", "out-of-range",
                  f"rank {{v}} is out of range (1..{INT_MAX})"),
        ],
    )  # fmt: skip
    if not has_errors(findings):
        # a rank given twice in one query leaves the order of its lines to chance: refused, as the contract's
        # duplicate (case_id, stage, rank) is
        findings += counted(
            con,
            f"""(SELECT max(line) AS line, min(line) AS first, any_value(p[1]) AS q, {rank} AS r
                 FROM {name}__raw GROUP BY p[1], {rank} HAVING count(*) > 1)""",
            "TRUE",
            "q || ' / ' || r || ', first at line ' || first",
            path,
            "rank",
            "duplicate",
            "duplicate (qid, rank) in one ranked list: {v}",
        )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, p[1] AS case_id, 'final' AS stage,
                   CAST(row_number() OVER (PARTITION BY p[1] ORDER BY {rank}, p[2] DESC) AS BIGINT) AS rank,
                   p[2] AS document_id, 1.0 / {rank} AS score, {RESULT_COLUMNS},
                   CAST(NULL AS VARCHAR) AS tag
            FROM {name}__raw WHERE len(p) = 3"""
    )
    return _finish(con, name, path, "msmarco", findings), facts


def tag_counts(con: duckdb.DuckDBPyConnection, name: str, line: str = "line") -> dict[str, int]:
    """Each run tag of ``name`` and its line count, in the order of each tag's first line (column ``line``)."""
    rows = con.execute(f"SELECT tag, count(*) FROM {name} GROUP BY tag ORDER BY min({line})").fetchall()
    return {str(t): int(n) for t, n in rows}


def _qrels(
    con: duckdb.DuckDBPyConnection, path: Path, name: str, fmt: str, layout: str, findings: list[Finding]
) -> Staged:
    """Check the split qrels lines of ``layout`` (its fields named as TREC's and BEIR's are: the first the
    query, the one before last the document, the last the grade) and stage the lines that fit as labels."""
    n = len(layout.split())
    grade = f"p[{n}]"
    findings += _columns(con, name, path, layout)
    findings += counted(
        con, f"{name}__raw", f"len(p) = {n} AND {integer_sql(grade)} IS NULL", grade, path, "grade", "wrong-type",
        "relevance {v} is not an integer",
    )  # fmt: skip
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, p[1] AS case_id, p[{n - 1}] AS document_id, {integer_sql(grade)} AS grade, {LABEL_COLUMNS}
            FROM {name}__raw WHERE len(p) = {n}"""
    )
    return _finish(con, name, path, fmt, findings)


def stage_trec_qrels(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    """Stage ``qid iter docno rel`` lines as labels (annotator ``default``); any integer rel, negative included.
    A file of four single-space (or single-tab) separated fields with integer grades is read by DuckDB's CSV
    reader (``contract/trec_csv.py``); any other is split in SQL, which finds every bad line."""
    if not encoding_findings(path) and read_qrels(con, path, name, LABEL_COLUMNS):
        rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
        return Staged(name, path, "trec", int(rows), [], "line")
    findings = split_lines(con, path, name)
    if has_errors(findings):
        return Staged(name, path, "trec", 0, findings, "line")
    return _qrels(con, path, name, "trec", "qid iter docno rel", findings)


def stage_beir_qrels(con: duckdb.DuckDBPyConnection, path: Path, name: str, *, header: bool | None = None) -> Staged:
    """Stage a BEIR qrels TSV (``query-id corpus-id score``), with or without its header line (``None``: the
    first line decides, ``#`` lines included, by ``sniff.beir_header``)."""
    findings = split_lines(con, path, name, comments=False)
    if has_errors(findings):
        return Staged(name, path, "beir", 0, findings, "line")
    if header is None:
        first = con.execute(f"SELECT p FROM {name}__raw ORDER BY line LIMIT 1").fetchall()
        header = beir_header((r[0] for r in first), comments=False)
    if header:
        con.execute(f"DELETE FROM {name}__raw WHERE line = (SELECT min(line) FROM {name}__raw)")
    return _qrels(con, path, name, "beir", "query-id corpus-id score", findings)


def stage_tsv_queries(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    """Stage ``qid<TAB>query text`` lines (the MS MARCO / TREC topics TSV) as cases."""

    def select(lines: str) -> str:
        return f"""SELECT line, trim(t[1:strpos(t, chr(9)) - 1]) AS id,
                          trim(t[strpos(t, chr(9)) + 1:], ' ' || chr(13)) AS query, strpos(t, chr(9)) AS tab
                   FROM ({lines}) WHERE t IS NOT NULL AND trim(t) <> ''"""

    findings = read_raw(con, path, name, select)
    if has_errors(findings):
        return Staged(name, path, "tsv", 0, findings, "line")
    findings += counted(
        con, f"{name}__raw", "tab = 0", "left(id, 40)", path, None, "bad-columns", "expected 'id<TAB>query'"
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT line, id, query, {CASE_COLUMNS} FROM {name}__raw WHERE tab > 0"""
    )
    return _finish(con, name, path, "tsv", findings)


def stage_trec_topics(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> Staged:
    """Stage TREC topic files (``<top> <num> Number: 301 <title> ...``) as cases whose query is the title. The SGML
    is loose (``<num>`` and ``<title>`` are rarely closed, ``Number:`` and ``Topic:`` prefixes come and go), so each
    ``<top>`` block is gathered from its lines in SQL and its number and title are taken with regular expressions:
    the text up to the next tag, whitespace collapsed."""

    def select(lines: str) -> str:
        return f"""WITH l AS (SELECT line, coalesce(t, '') AS t,
                                     sum(CASE WHEN regexp_matches(t, '(?i)<top>') THEN 1 ELSE 0 END)
                                         OVER (ORDER BY line) AS block
                              FROM ({lines})),
                     b AS (SELECT block, min(line) AS line, string_agg(t, ' ' ORDER BY line) AS body
                           FROM l WHERE block > 0 GROUP BY block)
                     SELECT line,
                            nullif(regexp_extract(body, '(?i)<num>\\s*(?:number:)?\\s*([^\\s<]+)', 1), '') AS id,
                            nullif(trim(regexp_replace(regexp_extract(body, '(?i)<title>\\s*(?:topic:)?([^<]*)', 1),
                                                       '\\s+', ' ', 'g')), '') AS query
                     FROM b"""

    findings = read_raw(con, path, name, select)
    if has_errors(findings):
        return Staged(name, path, "trec-topics", 0, findings, "line")
    findings += counted(
        con, f"{name}__raw", "id IS NULL", "line", path, "num", "missing-field", "a <top> without <num>"
    )
    findings += counted(
        con, f"{name}__raw", "id IS NOT NULL AND query IS NULL", "id", path, "title", "missing-field",
        "topic {v} has no <title> text",
    )  # fmt: skip
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT line, id, query, {CASE_COLUMNS} FROM {name}__raw "
        "WHERE id IS NOT NULL AND query IS NOT NULL"
    )
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
    if rows == 0 and not findings:
        findings.append(Finding(str(path), None, None, "empty-file", "no <top> blocks found"))
    con.execute(f"DROP TABLE {name}__raw")
    return Staged(name, path, "trec-topics", int(rows), findings, "line")
