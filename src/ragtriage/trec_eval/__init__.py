"""``ragtriage trec-eval`` (and ``python -m ragtriage.trec_eval``): trec_eval's command line and output, computed
by the one measure engine without a store.

The qrels and the run are read into an in-memory DuckDB by the one-off evaluation's readers
(``store.load_memory``), trec_eval's flags become list cuts (``-M``, ``-J``), the relevance level (``-l``) and the
population (``-c``), and the measures (``trec_eval.plan``) are computed in one query by the one engine
(``metrics.engine``, through ``metrics.measure_eval``). The output is trec_eval's, line for line
(docs/trec_eval.md).

trec_eval refuses what it cannot evaluate, and so does this: a docno twice in one query's qrels or in one query's
list (within ``-M``), or (without ``-c``) a query of the qrels absent from the run. trec_eval finds these while it
prints, query by query: the lines of the queries before the first such query are printed as trec_eval prints
them, then the refusal (exit 4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.trec_eval.plan import Printed, TrecEvalError, plan

if TYPE_CHECKING:
    import duckdb

    from ragtriage.metrics.measure_eval import MeasureResult

__all__ = ["Options", "Outcome", "TrecEvalError", "run_trec_eval"]


@dataclass
class Options:
    """trec_eval's flags: ``-m`` (``measures``), ``-q``, ``-c``, ``-l``, ``-n`` (``summary`` off), ``-M``,
    ``-J``, ``-N``, ``-R``."""

    measures: list[str] = field(default_factory=list)
    per_query: bool = False
    complete: bool = False
    level: int = 1
    summary: bool = True
    max_docs: int | None = None
    judged_only: bool = False
    num_docs: int = 0
    rel_format: str = "qrels"  # -R: qrels, or prefs / qrels_prefs / qrels_jg (trec_eval.prefs)


@dataclass
class Outcome:
    """What the command prints on stdout, and on a refusal its message and trec_eval's exit code."""

    text: str
    error: str | None = None
    code: int = 0


def run_trec_eval(qrels: Path, run: Path, opts: Options) -> Outcome:
    """Evaluate ``run`` against ``qrels`` as ``trec_eval`` would with ``opts``. Raises :class:`TrecEvalError`
    for a refusal before any output, and the readers' errors (``ValidationFailed``) for a malformed file."""
    if opts.rel_format != "qrels":
        from ragtriage.trec_eval.prefs import run_other_format

        return Outcome(*run_other_format(qrels, run, opts))
    lines = plan(opts.measures, opts.num_docs)
    con = _open(qrels, run, opts.level)
    try:
        _rank(con, opts.max_docs)
        failing = _first_failing(con, opts)
        if opts.judged_only:
            _judged_only(con)
        _ranked_results(con)
        from ragtriage.metrics.measure_eval import evaluate_run
        from ragtriage.store.connection import run_ids

        measures = [p.measure for p in lines if p.measure is not None]
        res = evaluate_run(con, run_ids(con)[0], measures, trec_compat=True)
        text = _per_query(res, lines, failing[0] if failing else None) if opts.per_query else ""
        if failing:
            return Outcome(text, failing[1], 4)
        if opts.summary:
            text += _summary(res, lines, _tag(con), _complete_num_rel(con) if opts.complete else None)
        return Outcome(text)
    finally:
        con.close()


def _open(qrels: Path, run: Path, level: int) -> duckdb.DuckDBPyConnection:
    """The in-memory store over both files, read as trec_eval reads them (``store.load_memory``)."""
    from ragtriage.store.load_memory import light_store

    for path in (qrels, run):
        if not Path(path).is_file():
            raise TrecEvalError(f"cannot read '{path}': no such file", 2)
    light = light_store(qrels, run, threshold=level, as_trec_eval=True)
    if light is None:
        raise TrecEvalError(f"'{run}' is not a TREC run file (qid Q0 docno rank score tag on each line)", 2)
    return light[0]


_ORDER = "row_number() OVER (PARTITION BY case_id ORDER BY score DESC, document_id DESC)"


def _rank(con: duckdb.DuckDBPyConnection, max_docs: int | None) -> None:
    """``ranked``: every list numbered in trec_eval's order (score, then docno, descending), once, so the engine
    reads positions as recorded ranks (a join) instead of counting, for each judged unit, the units before it;
    ``-M n`` keeps each list's first n."""
    cut = "" if max_docs is None else f"QUALIFY {_ORDER} <= {int(max_docs)}"
    con.execute(
        f"""CREATE OR REPLACE TABLE ranked AS
            SELECT case_id, document_id, score, CAST({_ORDER} AS INTEGER) AS rank FROM stg_run {cut}"""
    )


def _judged_only(con: duckdb.DuckDBPyConnection) -> None:
    """``-J``: only the judged units stay in the lists, which close up."""
    from ragtriage.contract.relevance import is_judged

    con.execute(
        f"""CREATE OR REPLACE TABLE ranked AS
            SELECT case_id, document_id, score, CAST({_ORDER} AS INTEGER) AS rank
            FROM ranked r SEMI JOIN (SELECT case_id, unit_id FROM qrels WHERE {is_judged()}) q
                 ON q.case_id = r.case_id AND q.unit_id = r.document_id"""
    )


def _ranked_results(con: duckdb.DuckDBPyConnection) -> None:
    """The store's ``results`` over ``ranked``, recorded as a run ranked in trec_eval's order without repeats."""
    con.execute(
        """CREATE OR REPLACE VIEW results AS
           SELECT 'run' AS run_id, 'final' AS stage, case_id, document_id AS unit_id, rank, score FROM ranked"""
    )
    con.execute("UPDATE runs SET source_format = 'trec', has_repeats = FALSE")


def _first_failing(con: duckdb.DuckDBPyConnection, opts: Options) -> tuple[str, str] | None:
    """(query id, message) of the first query (byte order, trec_eval's) trec_eval would stop at, or None."""
    checks: list[str] = []
    if _repeated(con, "stg_labels"):
        checks.append(
            "SELECT case_id, 'a document id twice in its qrels: ' || min(document_id) AS why FROM stg_labels "
            "WHERE case_id IN (SELECT case_id FROM cases) GROUP BY case_id, document_id HAVING count(*) > 1"
        )
    if _repeated(con, "ranked"):
        checks.append(
            "SELECT case_id, 'a document id twice in its ranked list: ' || min(document_id) AS why FROM ranked "
            "GROUP BY case_id, document_id HAVING count(*) > 1"
        )
    if not opts.complete:
        checks.append(
            "SELECT case_id, 'in the qrels but not in the run (use -c to score it 0)' AS why FROM cases "
            "WHERE case_id NOT IN (SELECT case_id FROM stg_run__cases)"  # the reader's one row per run query
        )
    if not checks:
        return None
    row = con.execute(f"SELECT case_id, min(why) FROM ({' UNION ALL '.join(checks)}) GROUP BY ALL ORDER BY 1 LIMIT 1")
    found = row.fetchall()
    if not found:
        return None
    from ragtriage.safe_text import visible

    qid, why = found[0]
    return str(qid), f"trec-eval: query {visible(qid)!r}: {visible(why)}; trec_eval stops here (exit 4)"


def _repeated(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether some query of ``table`` may hold a docno twice: equal (query, docno) hash alike, so no hash
    repeated means none (one integer key to group instead of two strings); suspects are confirmed on the ids."""
    from ragtriage.contract.rules import repeated_hashes

    return bool(repeated_hashes(con, f"SELECT hash(case_id, document_id) AS h FROM {table}").num_rows > 0)


def _tag(con: duckdb.DuckDBPyConnection) -> str:
    """The run's tag as trec_eval prints it for runid: the tag of the run file's last line."""
    rows = con.execute("SELECT tag FROM stg_run ORDER BY rowid DESC LIMIT 1").fetchall()
    return str(rows[0][0]) if rows else ""


_FORMATS = {
    "double": "printf('%-22s\t%s\t%6.4f', {name}, qid, {col})",
    "long": "printf('%-22s\t%s\t%d', {name}, qid, CAST(trunc({col}) AS BIGINT))",
    "text": "printf('%-22s\t%s\t''%s''', {name}, qid, {col})",
}


def _per_query(res: MeasureResult, lines: list[Printed], before: str | None) -> str:
    """trec_eval -q's lines: each query (byte order) with its measures in order; only queries before ``before``."""
    from ragtriage.contract.staging import qident, sql_str
    from ragtriage.metrics.context import over_arrow
    from ragtriage.safe_text import visible_array

    wide = res.wide.append_column("qid", visible_array(res.wide.column("case_id")))
    parts = [
        f"SELECT case_id, {i} AS idx, "
        + _FORMATS[p.kind].format(name=sql_str(p.name), col=qident(str(_resolved(res, p))))
        + " AS line FROM wide"
        for i, p in enumerate(lines)
        if p.per_query and p.measure is not None
    ]
    if not parts:
        return ""
    where, params = ("WHERE case_id < $before", {"before": before}) if before is not None else ("", {})
    sql = f"SELECT string_agg(line, chr(10) ORDER BY case_id, idx) AS t FROM ({' UNION ALL '.join(parts)}) {where}"
    text = over_arrow(sql, params, wide=wide).column("t")[0].as_py() or ""
    return f"{text}\n" if text else ""


def _resolved(res: MeasureResult, p: Printed) -> object:
    """The engine's resolved measure (its column name) of a planned line."""
    assert p.measure is not None
    for m in res.measures:
        same = m.name == p.measure.name and m.cutoff == p.measure.cutoff and m.params == p.measure.params
        if same and (m.dcg == p.measure.dcg or p.measure.dcg is None):
            return m
    raise KeyError(str(p.measure))


def _complete_num_rel(con: duckdb.DuckDBPyConnection) -> int:
    """trec_eval's ``num_rel all`` under ``-c``: every judgment graded 1 or more, whatever ``-l`` says. trec_eval
    sums its ``-c`` total from the qrels at the default level while each query's own line, and every other
    measure, keeps ``-l``; a drop-in prints the same total, so scripts that read it see the same number."""
    from ragtriage.contract.relevance import is_relevant

    row = con.execute(f"SELECT count(*) FROM qrels WHERE {is_relevant('grade', 1)}").fetchone()
    return int(row[0]) if row else 0


def _summary(res: MeasureResult, lines: list[Printed], tag: str, complete_num_rel: int | None = None) -> str:
    from ragtriage.safe_text import visible

    agg = res.aggregate
    values = dict(zip(agg.column("measure").to_pylist(), agg.column("value").to_pylist(), strict=True))
    out = []
    for p in lines:
        if not p.summary:
            continue
        if p.measure is None:
            out.append(f"{p.name:<22}\tall\t{visible(tag)}\n")
            continue
        v = values[str(_resolved(res, p))]
        v = 0.0 if v is None else v
        if p.name == "num_rel" and complete_num_rel is not None:
            v = complete_num_rel
        shown = f"{int(v)}" if p.kind == "long" else f"{v:6.4f}"
        out.append(f"{p.name:<22}\tall\t{shown}\n")
    return "".join(out)
