"""An evaluation without a store: qrels and a TREC run in an in-memory DuckDB, under the names the measures read,
for ``ragtriage metrics --qrels F --run F`` and ``ragtriage.evaluate`` (what trec_eval or pytrec_eval is called
for: the figures, once).

A load into a store writes a dataset version (a content hash over every label), a copy of every result row,
the load history and the warnings a stored run keeps; none of that is read by the measures. Here the inputs are
read by the same readers as ``ragtriage load`` (``store.byo.stage_qrels``; the run through DuckDB's CSV reader,
``contract/trec_csv.py``), and the
staged tables are shown as ``cases``, ``qrels``, ``results``, ``runs`` and ``current_dataset`` (tables and views of
the main schema, which the measures' cursors see; temp objects are private to one cursor), so the one
computation (``metrics.measure_eval.evaluate_run``) runs on them unchanged. The qrels get one grade per (query,
document) by the store's own rule (``schema.QRELS_LIVE``); the run keeps no rank: lists are ordered by score, then
docno, descending, as the loader ranks a TREC run and as trec_eval reads one.

Only clean inputs take this path: qrels in any format the load reads and a TREC run file; anything the load would
report or reject (a finding of any kind, a label rule error) and every other run format make :func:`light_store`
return None, and the caller loads the inputs into an in-memory store the full way, which reports exactly what
``ragtriage load`` reports. A docno repeated in a list is no finding: a loaded run keeps every line and its
measures count the occurrence ranked first (``store.dedup``); here the other occurrences are deleted once, so the
measures read lists without repeats and give the same figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from ragtriage.contract.compression import scratch
from ragtriage.contract.digest import unrecorded
from ragtriage.contract.sniff import SniffError, sniff
from ragtriage.contract.trec import LABEL_COLUMNS, tag_counts
from ragtriage.contract.trec_csv import TrecRun, read_run
from ragtriage.store.grades import apply_grade_map, parse_grade_map
from ragtriage.store.memory_cap import cap_in_memory
from ragtriage.store.schema import QRELS_LIVE

RUN_ID = "run"
UNRANKED = "trec-by-score"
"""``runs.source_format`` of a run staged here: no ranks (the measures order each list by score, docno desc),
every row scored and of a case (rows of run topics that are not cases are deleted, after they are counted)."""


def _trec_file(source: Any, role: str) -> Path | None:
    if not isinstance(source, str | Path):
        return None
    path = Path(source)
    try:
        return path if path.is_file() and sniff(path, role).fmt == "trec" else None
    except SniffError:
        return None


def _qrels_input(source: Any) -> bool:
    """A qrels file of any format, a dict-of-dicts or a frame (a folder is a dataset: the full load reads it)."""
    from ragtriage.contract.frames import is_frame

    return isinstance(source, dict) or is_frame(source) or (isinstance(source, str | Path) and Path(source).is_file())


def light_store(
    qrels: Any,
    run: Any,
    *,
    threshold: int | None = None,
    grade_map: str | dict[int, int] | None = None,
    as_trec_eval: bool = False,
) -> tuple[duckdb.DuckDBPyConnection, str, list[str]] | None:
    """(connection, run id, notes) of an in-memory evaluation store over qrels (a file of any format, a dict or a
    frame) and a TREC run file, or None when the inputs need the full load (another run format, anything to
    report). ``as_trec_eval`` (``ragtriage trec-eval``): never None for a TREC run file; a docno repeated in a
    list stays in ``stg_run`` for the caller to refuse as trec_eval does, a run the fast reader cannot take is
    read by the general TREC reader, and a malformed file raises ``ValidationFailed`` with its lines."""
    run_path = _trec_file(run, "run")
    if run_path is None or not _qrels_input(qrels):
        return None
    mapping = parse_grade_map(grade_map)  # a bad map raises ValueError, as the full load does
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        cap_in_memory(con)
        with scratch(), unrecorded():
            read = _stage(con, qrels, run_path, mapping, as_trec_eval)
        if read is None:
            con.close()
            return None
        notes = _views(con, 1 if threshold is None else threshold, read, one_line_each=as_trec_eval)
        if not as_trec_eval:
            _keep_first(con)
    except BaseException:
        con.close()
        raise
    return con, RUN_ID, notes


def _stage(
    con: duckdb.DuckDBPyConnection, qrels: Any, run: Path, grade_map: dict[int, int], as_trec_eval: bool = False
) -> TrecRun | None:
    """Stage both inputs; None when either has anything the full load would report."""
    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.contract.field_rules import field_rules
    from ragtriage.contract.fields import LABELS
    from ragtriage.contract.rules import apply_rules
    from ragtriage.store.byo import stage_qrels
    from ragtriage.store.dataset_rules import judgement_rule

    try:
        labels = stage_qrels(con, qrels)  # the load's own reader for every qrels format (TREC: the CSV fast path)
    except (ValidationFailed, ValueError):  # unreadable or of no known format: the full load says so
        if as_trec_eval:
            raise
        return None
    # the label rules that can refuse a load (empty ids, grades beyond INTEGER, a pair judged twice by one
    # annotator): any finding goes the full way; trec-eval refuses a pair given twice itself, as trec_eval does
    rules = [r for r in field_rules(LABELS) if r.severity == "error"]
    found = labels.findings or apply_rules(con, labels, rules if as_trec_eval else [*rules, judgement_rule()])
    if found:
        if as_trec_eval:
            raise ValidationFailed(list(found))
        return None
    if grade_map:
        apply_grade_map(con, "stg_labels", grade_map)
    read = read_run(con, run, "stg_run", temp=False, evaluation=not as_trec_eval)  # hashes for _keep_first
    if read is None and as_trec_eval:
        read = _general_run(con, run)
    return read


def _general_run(con: duckdb.DuckDBPyConnection, run: Path) -> TrecRun:
    """``stg_run`` read by the general TREC reader (any whitespace, every bad line found and raised)."""
    from ragtriage.contract.errors import ValidationFailed, errors_of, has_errors
    from ragtriage.contract.trec import stage_trec_run

    staged, _facts = stage_trec_run(con, run, "stg_run_any")
    if has_errors(staged.findings):
        raise ValidationFailed(errors_of(staged.findings))
    con.execute(
        """CREATE OR REPLACE TABLE stg_run AS
           SELECT case_id, document_id, chunk_id, score, tag FROM stg_run_any ORDER BY line"""
    )
    con.execute("CREATE OR REPLACE TEMP TABLE stg_run__cases AS SELECT case_id, count(*) AS n FROM stg_run GROUP BY 1")
    tags = con.execute("SELECT min(tag), max(tag) FROM stg_run").fetchall()[0]
    return TrecRun(0, "stg_run__cases", str(tags[0]) if tags[0] == tags[1] else None)


def _views(con: duckdb.DuckDBPyConnection, threshold: int, read: TrecRun, *, one_line_each: bool = False) -> list[str]:
    """The store's names over the staged tables, and the notes a report prints beside the figures.
    ``one_line_each``: each qrels line is its (query, document)'s grade, as trec_eval reads qrels (the caller
    refuses a pair given twice), instead of pooling the lines of one pair into one grade. Qrels of one annotator,
    ``default``, judging documents (what every TREC, BEIR or dict qrels is) hold each pair once, since the
    judgement rule refused a pair judged twice by one annotator: pooling then gives each line's own grade, and the
    pooling query (a median per pair) is skipped."""
    from ragtriage.store.load import LoadReport

    assert "annotator" in LABEL_COLUMNS  # the pooling rule below reads it
    con.execute(
        """CREATE TEMP VIEW labels AS
           SELECT case_id, document_id AS unit_id, annotator, grade FROM stg_labels"""
    )
    if one_line_each or _one_annotator(con):
        con.execute(
            """CREATE TABLE qrels AS SELECT case_id, unit_id, CAST(grade AS INTEGER) AS grade, 1 AS n_annotators,
                      grade AS min_grade, grade AS max_grade, FALSE AS adjudicated FROM labels"""
        )
    else:
        con.execute(f"CREATE TABLE qrels AS {QRELS_LIVE}")
    con.execute(
        """CREATE TABLE cases AS
           SELECT DISTINCT case_id, TRUE AS answerable, CAST(NULL AS VARCHAR) AS split FROM stg_labels"""
    )
    con.execute(
        f"""CREATE VIEW results AS
            SELECT '{RUN_ID}' AS run_id, 'final' AS stage, case_id, document_id AS unit_id,
                   CAST(NULL AS INTEGER) AS rank, score
            FROM stg_run"""
    )
    lists = con.execute(
        f"""SELECT count(*) FILTER (WHERE c.case_id IS NULL), coalesce(sum(n) FILTER (WHERE c.case_id IS NULL), 0),
                   sum(n)
            FROM {read.cases} r LEFT JOIN cases c USING (case_id)"""
    ).fetchall()[0]
    tags = {read.tag: int(lists[2])} if read.tag is not None else tag_counts(con, "stg_run", "rowid")
    if lists[0]:  # the results hold only cases' rows, as a store's do (the measures rely on it)
        con.execute("DELETE FROM stg_run WHERE case_id NOT IN (SELECT case_id FROM cases)")
    con.execute(
        f"""CREATE TABLE runs AS
            SELECT '{RUN_ID}' AS run_id, FALSE AS has_repeats, '{UNRANKED}' AS source_format"""
    )
    con.execute("CREATE TABLE meta AS SELECT 'current_dataset' AS key, 'memory' AS value")
    con.execute(
        f"""CREATE VIEW current_dataset AS
            SELECT 'memory' AS dataset_version, {int(threshold)} AS relevance_threshold, 'document' AS unit"""
    )
    report = LoadReport("run", RUN_ID, ignored_topics=int(lists[0]), ignored_rows=int(lists[1]), tags=tags)
    return report.notes()


def _one_annotator(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether every staged label is annotator ``default``'s label of a whole document (a NULL annotator is not:
    the pooling leaves its labels out)."""
    row = con.execute(
        """SELECT coalesce(bool_and(coalesce(annotator = 'default' AND chunk_id IS NULL AND section_id IS NULL,
                                             FALSE)), TRUE)
           FROM stg_labels"""
    ).fetchall()
    return bool(row[0][0])


def _keep_first(con: duckdb.DuckDBPyConnection) -> None:
    """Each docno of a list once: the occurrence the load ranks first (the highest score; ``store.dedup``'s rule
    over the load's order, score then docno descending, of which only the score differs between occurrences of one
    docno) stays and the others go. Suspects come from the load's hash search (``contract.rules``) over the
    hashes the reader took (``h``), so the window reads the few lists with a repeated hash only, and a hash
    collision deletes nothing."""
    from ragtriage.contract.rules import repeated_hashes
    from ragtriage.store.dedup import occurrence

    dups = repeated_hashes(con, "SELECT h FROM stg_run")
    if dups.num_rows == 0:
        return
    con.register("_dup_hashes", dups)
    try:
        con.execute(
            f"""DELETE FROM stg_run WHERE rowid IN (
                    SELECT row FROM (SELECT rowid AS row, case_id, document_id AS unit_id, -score AS rank
                                     FROM stg_run WHERE h IN (SELECT h FROM _dup_hashes))
                    QUALIFY {occurrence()} > 1)"""
        )
    finally:
        con.unregister("_dup_hashes")
