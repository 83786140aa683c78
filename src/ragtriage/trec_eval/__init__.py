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

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ragtriage.trec_eval.plan import ORDER, Options, Printed, TrecEvalError, plan
from ragtriage.trec_eval.prefs import run_other_format, wrong_format

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.metrics.measure_eval import MeasureResult

__all__ = ["Options", "Outcome", "TrecEvalError", "run_trec_eval"]


@dataclass
class Outcome:
    """What the command prints on stdout, and on a refusal its message and trec_eval's exit code."""

    text: str
    error: str | None = None
    code: int = 0
    encoding: str = "utf-8"  # the bytes of ``text``: Latin-1 when an input was not UTF-8 (``trec_eval.read``)


def run_trec_eval(qrels: Path, run: Path, opts: Options, stdin: BinaryIO | None = None) -> Outcome:
    """Evaluate ``run`` against ``qrels`` as ``trec_eval`` would with ``opts``; ``stdin``: the run's bytes when
    ``run`` is '-' (trec_eval's standard input). Raises :class:`TrecEvalError` for a refusal before any output."""
    if stdin is not None:
        import shutil
        import tempfile

        with tempfile.TemporaryDirectory(prefix="ragtriage-trec-eval-") as tmp:
            copy = Path(tmp) / "stdin"
            with copy.open("wb") as fh:
                shutil.copyfileobj(stdin, fh)
            return run_trec_eval(qrels, copy, opts)
    if opts.rel_format != "qrels":
        return Outcome(*run_other_format(qrels, run, opts))
    lines = plan(opts.measures, opts.num_docs)
    zscores = _read_zscores(opts.zscores) if opts.zscores is not None else None
    con, encoding = _open(Path(qrels), Path(run), opts.level)
    try:
        refusal = wrong_format(opts.measures, "qrels")
        if refusal is not None:
            raise refusal
        _rank(con, opts.max_docs)
        failing = _first_failing(con, opts, lines)
        if opts.judged_only:
            _judged_only(con)
        _ranked_results(con)
        from ragtriage.metrics.measure_eval import evaluate_run
        from ragtriage.metrics.measures import parse_measure
        from ragtriage.store.connection import run_ids

        # runid alone asks the engine for nothing: it still evaluates one measure, which prints nothing
        measures = [p.measure for p in lines if p.measure is not None] or [parse_measure("num_q")]
        res = evaluate_run(con, run_ids(con)[0], measures, trec_compat=True)
        z = zscores is not None
        wide, redone = _emptied(con, res, lines, opts) if opts.judged_only or opts.complete else (res.wide, [])
        wide = _zscored(res, wide, lines, zscores) if zscores is not None else wide
        shown = _shown(opts.raw)
        text = _per_query(res, wide, lines, failing[0] if failing else None, z, opts.raw) if opts.per_query else ""
        if failing:
            return Outcome(text, failing[1], 4, encoding)
        tag = shown(_tag(con))
        if opts.summary and z:
            text += _zsummary(res, wide, lines, tag)
        elif opts.summary:
            text += _summary(res, lines, tag, _complete_num_rel(con) if opts.complete else None, wide, redone)
        return Outcome(text, encoding=encoding)
    finally:
        con.close()


def _open(qrels: Path, run: Path, level: int) -> tuple[duckdb.DuckDBPyConnection, str]:
    """The in-memory store over both files, read as trec_eval reads them (``trec_eval.read``, then
    ``store.load_memory``), and the encoding the ids are written back in."""
    from ragtriage.contract.errors import ValidationFailed
    from ragtriage.trec_eval.read import decoded, qrels_frame, readable

    readable(qrels, "qrels")
    readable(run, "run")
    data = _bytes(qrels)
    text, encoding = decoded(data)
    try:
        return _light(qrels_frame(qrels, text), run, level), encoding
    except ValidationFailed as exc:
        if not any(e.code == "encoding" for e in exc.errors):
            raise _refusal(run, exc) from exc
    # a run that is not UTF-8: both files as Latin-1, so their ids compare as trec_eval compares the bytes
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ragtriage-trec-eval-") as tmp:
        copy = Path(tmp) / run.name
        copy.write_bytes(run.read_bytes().decode("latin-1").encode("utf-8"))
        frame = qrels_frame(qrels, data.decode("latin-1"))
        try:
            return _light(frame, copy, level), "latin-1"
        except ValidationFailed as exc:
            raise _refusal(run, exc) from exc


def _bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when it is gzip or bz2 (which the load reads too; trec_eval does not)."""
    import zlib

    from ragtriage.contract.compression import open_binary

    try:
        with open_binary(path) as fh:
            return fh.read()
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise TrecEvalError(f"trec-eval: cannot read '{path}': {exc}", 2) from exc


def _light(qrels: object, run: Path, level: int) -> duckdb.DuckDBPyConnection:
    from ragtriage.store.load_memory import light_store

    light = light_store(qrels, run, threshold=level, as_trec_eval=True)
    if light is None:
        from ragtriage.trec_eval.read import run_line_number

        n = run_line_number(run, None)
        if n is not None:
            raise TrecEvalError(f"trec_eval.get_results: Malformed line {n}\ntrec_eval: Quit in file '{run}'", 2)
        raise TrecEvalError(f"'{run}' is not a TREC run file (qid Q0 docno rank score tag on each line)", 2)
    return light[0]


def _refusal(run: Path, exc: ValidationFailed) -> TrecEvalError:
    """A run the readers refuse: trec_eval's lines when its first bad line breaks trec_eval's grammar too, then
    every cause (file, line, field) the readers found."""
    from ragtriage.trec_eval.read import run_line_number

    first = exc.errors[0]
    ours = "\n".join(f"trec-eval: {e}" for e in exc.errors)
    n = run_line_number(run, first.line) if first.line is not None else None
    if n is None:
        return TrecEvalError(ours, 2)
    return TrecEvalError(f"trec_eval.get_results: Malformed line {n}\ntrec_eval: Quit in file '{run}'\n{ours}", 2)


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


def _first_failing(con: duckdb.DuckDBPyConnection, opts: Options, lines: list[Printed]) -> tuple[str, str] | None:
    """(query id, message) of the first query (byte order, trec_eval's) trec_eval would stop at, or None. The
    message starts with trec_eval's own lines; its check order within a query is kept (a query absent from the
    run, then a docno twice in the list, then twice in the qrels). Only a measure that reads the judgments meets
    a repeated docno: with ``runid`` and ``num_q`` alone trec_eval prints and exits 0."""
    first = next((p.name for p in lines if p.name not in ("runid", "num_q")), None)
    first = None if first is None else next(n for n in ORDER if first.startswith(n) and _stem(first, n))
    checks: list[str] = []
    if first is not None and _repeated(con, "stg_labels"):
        checks.append(
            "SELECT case_id, 2 AS k, min(document_id) AS doc FROM stg_labels WHERE case_id IN (SELECT case_id "
            "FROM cases) GROUP BY case_id, document_id HAVING count(*) > 1"
        )
    if first is not None and _repeated(con, "ranked"):
        checks.append(
            "SELECT case_id, 1 AS k, min(document_id) AS doc FROM ranked WHERE case_id IN (SELECT case_id FROM "
            "cases) GROUP BY case_id, document_id HAVING count(*) > 1"
        )
    if first is not None:  # trec_eval's first query with no grade >= 0 finds no space for its levels
        checks.append(
            "SELECT c.case_id, 3 AS k, NULL AS doc FROM (SELECT min(case_id) AS case_id FROM cases) c "
            "JOIN (SELECT case_id, max(grade) AS g FROM qrels GROUP BY case_id) q USING (case_id) WHERE q.g < 0"
        )
    if not opts.complete:
        checks.append(
            "SELECT case_id, 0 AS k, NULL AS doc FROM cases "
            "WHERE case_id NOT IN (SELECT case_id FROM stg_run__cases)"  # the reader's one row per run query
        )
    if not checks:
        return None
    sql = f"SELECT case_id, k, min(doc) FROM ({' UNION ALL '.join(checks)}) GROUP BY ALL ORDER BY 1, 2 LIMIT 1"
    found = con.execute(sql).fetchall()
    if not found:
        return None
    from ragtriage.safe_text import visible

    qid, kind, doc = found[0]
    theirs = {
        0: f"trec_eval: result qid '{qid}' not found in qrels",
        1: f"trec_eval.form_res_qrels: duplicate docs {doc}trec_eval: Can't calculate measure '{first}'",
        2: f"trec_eval.form_res_rels: duplicate docs {doc}\ntrec_eval: Can't calculate measure '{first}'",
        3: f"trec_eval: Can't calculate measure '{first}'",
    }[kind]
    why = {
        0: "in the qrels but not in the run (use -c to score it 0)",
        1: f"a document id twice in its ranked list: {doc}",
        2: f"a document id twice in its qrels: {doc}",
        3: "the first query's judgments are all negative (unjudged)",
    }[kind]
    return str(qid), f"{theirs}\ntrec-eval: query {visible(qid)!r}: {visible(why)}; trec_eval stops here (exit 4)"


def _stem(printed: str, name: str) -> bool:
    """Whether ``printed`` (``P_5``, ``ndcg_1=3``) is a line of trec_eval measure ``name``."""
    return printed == name or (
        printed.startswith(name + "_")
        and not any(
            printed.startswith(o + "_") or printed == o for o in ORDER if len(o) > len(name) and o.startswith(name)
        )
    )


def _repeated(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether some query of ``table`` may hold a docno twice: equal (query, docno) hash alike, so no hash
    repeated means none (one integer key to group instead of two strings); suspects are confirmed on the ids."""
    from ragtriage.contract.rules import repeated_hashes

    return bool(repeated_hashes(con, f"SELECT hash(case_id, document_id) AS h FROM {table}").num_rows > 0)


def _tag(con: duckdb.DuckDBPyConnection) -> str:
    """The run's tag as trec_eval prints it for runid: the tag of the run file's last line."""
    rows = con.execute("SELECT tag FROM stg_run ORDER BY rowid DESC LIMIT 1").fetchall()
    return str(rows[0][0]) if rows else ""


_C_DOUBLE = "CASE WHEN isnan({col}) THEN '  -nan' ELSE printf('%6.4f', {col}) END"  # C's %6.4f, glibc's -nan
_FORMATS = {
    "double": "printf('%-22s\t%s\t%s', {name}, qid, " + _C_DOUBLE + ")",
    "long": "printf('%-22s\t%s\t%d', {name}, qid, CAST(trunc({col}) AS BIGINT))",
    "text": "printf('%-22s\t%s\t''%s''', {name}, qid, {col})",
    "zdouble": "printf('%-23s\t%s\t%s', {name}, qid, " + _C_DOUBLE + ")",
}


def _shown(raw: bool) -> Callable[[str], str]:
    """How an id or tag is written: as it is, or (a terminal) with its control characters made visible."""
    from ragtriage.safe_text import visible

    return (lambda s: s) if raw else visible


def _per_query(
    res: MeasureResult, wide: pa.Table, lines: list[Printed], before: str | None, z: bool = False, raw: bool = False
) -> str:
    """trec_eval -q's lines: each query (byte order) with its measures in order; only queries before ``before``.
    ``z`` (``-Z``): the values are z-scores, each name prefixed ``Z`` and printed as a double."""
    from ragtriage.contract.staging import qident, sql_str
    from ragtriage.metrics.context import over_arrow
    from ragtriage.safe_text import visible_array

    qids = wide.column("case_id")
    wide = wide.append_column("qid", qids if raw else visible_array(qids))
    parts = [
        f"SELECT case_id, {i} AS idx, "
        + _FORMATS["zdouble" if z and p.kind != "text" else p.kind].format(
            name=sql_str(("Z" if z and p.kind != "text" else "") + p.name), col=qident(str(_resolved(res, p)))
        )
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


_ZMISSING = -1000000.0  # trec_eval's MISSING_ZSCORE_VALUE


def _read_zscores(path: Path) -> pa.Table:
    """``-Z``'s file, lines of ``qid measure mean stddev`` (blanks between), as trec_eval reads it: (qid, meas,
    mean, sd); a line without its 4 fields stops the command as trec_eval does (exit 255, its message)."""
    from ragtriage.metrics.context import over_arrow

    if not Path(path).is_file() or Path(path).stat().st_size == 0:
        raise TrecEvalError(f"trec_eval.get_zscores: Cannot read zscores file '{path}'", 255)
    text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    table = over_arrow(
        r"""WITH s AS (SELECT string_split(rtrim($t, chr(10)), chr(10)) AS ls),
           l AS (SELECT unnest(generate_series(1, len(ls))) AS i, unnest(ls) AS line FROM s),
           f AS (SELECT i, regexp_split_to_array(trim(regexp_replace(line, '[\t\r\v\f ]+', ' ', 'g')), ' ') AS f FROM l)
           SELECT i, f[1] AS qid, f[2] AS meas, TRY_CAST(f[3] AS DOUBLE) AS mean, TRY_CAST(f[4] AS DOUBLE) AS sd,
                  len(f) = 4 AND f[1] != '' AS ok FROM f""",
        {"t": text},
    )
    bad = over_arrow("SELECT min(i) AS i FROM z WHERE NOT ok", z=table).column("i")[0].as_py()
    if bad is not None:
        raise TrecEvalError(f"trec_eval.get_zscores: Malformed line {bad}", 255)
    return table


def _emptied(
    con: duckdb.DuckDBPyConnection, res: MeasureResult, lines: list[Printed], opts: Options
) -> tuple[pa.Table, list[str]]:
    """``-J`` on a query whose every listed document is unjudged, as trec_eval evaluates an empty list (the engine
    scores it as a query absent from the run): interpolated precision starts from 0 retrieved / 0 retrieved, a
    NaN, kept at each recall level whose cut round(level x R) is 0 (and so in 11pt_avg); utility counts the
    relevant documents missed. Under ``-c`` a query absent from the run is trec_eval's stand-in list of one document
    not in the pool (empty after ``-J``), which its clean-up zeroes except for a utility with parameters. The
    table and the columns whose mean is taken again."""
    from ragtriage.contract.relevance import is_relevant
    from ragtriage.contract.staging import qident
    from ragtriage.metrics.context import over_arrow

    iprec = [p for p in lines if p.measure is not None and p.measure.name in ("iprec_at_recall", "11pt_avg", "utility")]
    if not iprec:
        return res.wide, []
    level, judged = opts.level, opts.judged_only
    emptied = "SELECT case_id, FALSE AS missing FROM stg_run__cases WHERE case_id NOT IN (SELECT case_id FROM ranked)"
    missing = "SELECT case_id, TRUE AS missing FROM cases WHERE case_id NOT IN (SELECT case_id FROM stg_run__cases)"
    parts = ([emptied] if judged else []) + ([missing] if opts.complete else [])
    empty = con.sql(
        f"""SELECT c.case_id, c.missing, count(q.unit_id) FILTER (WHERE {is_relevant("q.grade", level)}) AS nrel
            FROM ({" UNION ALL ".join(parts)}) c LEFT JOIN qrels q USING (case_id) GROUP BY ALL"""
    ).to_arrow_table()
    if empty.num_rows == 0:
        return res.wide, []
    swap = {}
    for p in iprec:
        assert p.measure is not None
        col = qident(str(_resolved(res, p)))
        xs = [f"CAST({float(x)!r} AS DOUBLE)" for x in p.measure.params]
        if p.measure.name == "utility":
            p2, p3, p4, n = xs[1], xs[2], xs[3], xs[4] if len(xs) > 4 else "0.0"
            ret = f"CASE WHEN e.missing AND NOT {judged} THEN 1 ELSE 0 END"
            value = f"{p2} * {ret} + {p3} * e.nrel + {p4} * ({n} - {ret} - e.nrel)"
            kept = "e.missing AND " + ("TRUE" if p.name == "utility" else "FALSE")  # the clean-up's exact name
            swap[col] = f"CASE WHEN e.case_id IS NOT NULL AND NOT ({kept}) THEN {value} ELSE w.{col} END"
            continue
        if not judged:
            continue
        xs = xs[:1] if p.measure.name == "iprec_at_recall" else xs
        nan = " OR ".join(f"round({x} * e.nrel) = 0" for x in xs)
        swap[col] = f"CASE WHEN e.case_id IS NOT NULL AND ({nan}) THEN 'NaN'::DOUBLE ELSE w.{col} END"
    cols = ", ".join(
        f"{swap[qident(c)]} AS {qident(c)}" if qident(c) in swap else f"w.{qident(c)}" for c in res.wide.column_names
    )
    table = over_arrow(f"SELECT {cols} FROM wide w LEFT JOIN e USING (case_id)", wide=res.wide, e=empty)
    return table, [c for c in (str(_resolved(res, p)) for p in iprec) if qident(c) in swap]


def _zscored(res: MeasureResult, wide: pa.Table, lines: list[Printed], zscores: pa.Table) -> pa.Table:
    """``-Z``: each query's value as (value - mean) / stddev of its query and measure in the z-scores file (0 when
    the deviation is 0 and the value is the mean), trec_eval's -1000000 when the file lacks the pair."""
    from ragtriage.contract.staging import qident, sql_str
    from ragtriage.metrics.context import over_arrow

    cols, joins = ["w.case_id"], []
    for i, p in enumerate(lines):
        if p.measure is None:
            continue
        col = qident(str(_resolved(res, p)))
        if p.kind == "text":
            cols.append(f"w.{col}")
            continue
        joins.append(
            f"LEFT JOIN (SELECT DISTINCT ON (qid, meas) * FROM z) AS z{i} ON z{i}.qid = w.case_id "
            f"AND z{i}.meas = {sql_str(p.name)}"
        )
        v = f"CAST(w.{col} AS DOUBLE)"
        cols.append(
            f"CASE WHEN z{i}.sd IS NULL THEN {_ZMISSING} WHEN z{i}.sd != 0 THEN ({v} - z{i}.mean) / z{i}.sd "
            f"WHEN {v} = z{i}.mean THEN 0.0 ELSE {_ZMISSING} END AS {col}"
        )
    return over_arrow(f"SELECT {', '.join(dict.fromkeys(cols))} FROM wide w {' '.join(joins)}", wide=wide, z=zscores)


def _zsummary(res: MeasureResult, wide: pa.Table, lines: list[Printed], tag: str) -> str:
    """``-Z``'s ``all`` lines: trec_eval averages (or sums, or takes the geometric mean of) the z-scores."""
    values = res.aggregates_of(wide)
    out = []
    for p in lines:
        if not p.summary:
            continue
        if p.measure is None:
            out.append(f"{p.name:<22}\tall\t{tag}\n")
            continue
        v = float(wide.num_rows) if p.name == "num_q" else values[str(_resolved(res, p))]
        out.append(f"Z{p.name:<22}\tall\t{_c_double(0.0 if v is None else float(v))}\n")
    return "".join(out)


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


def _summary(
    res: MeasureResult,
    lines: list[Printed],
    tag: str,
    complete_num_rel: int | None = None,
    wide: pa.Table | None = None,
    redone: list[str] | None = None,
) -> str:
    """The ``all`` lines; for the ``redone`` columns of ``wide`` (``-J``'s emptied lists) the mean over ``wide``,
    a NaN when a query's value is one, as C's mean."""

    agg = res.aggregate
    values = dict(zip(agg.column("measure").to_pylist(), agg.column("value").to_pylist(), strict=True))
    if wide is not None and redone:
        values.update({c: v for c, v in res.aggregates_of(wide.select(["case_id", *redone])).items() if c in redone})
    out = []
    for p in lines:
        if not p.summary:
            continue
        if p.measure is None:
            out.append(f"{p.name:<22}\tall\t{tag}\n")
            continue
        v = values[str(_resolved(res, p))]
        v = 0.0 if v is None else v
        if p.name == "num_rel" and complete_num_rel is not None:
            v = complete_num_rel
        shown = f"{int(v)}" if p.kind == "long" else _c_double(v)
        out.append(f"{p.name:<22}\tall\t{shown}\n")
    return "".join(out)


def _c_double(v: float) -> str:
    """C's ``%6.4f`` (glibc prints a NaN made by 0/0 as ``-nan``)."""
    return "  -nan" if math.isnan(v) else f"{v:6.4f}"
