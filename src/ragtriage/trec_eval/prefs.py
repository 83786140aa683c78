"""trec_eval's other relevance formats (``-R prefs``, ``-R qrels_prefs``, ``-R qrels_jg``) and the measures only
they feed: the preference family (``all_prefs``: ``prefs_*``) and the judgment-group family (``qrels_jg``:
``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg``), with trec_eval's definitions (its ``form_prefs_counts.c``,
``form_res_rels_jg.c`` and ``m_*.c``) and its output layout.

These measures read judgments the store has no place for (a judgment group and sub-group per line, real-valued
preference levels), so they are computed here on an in-memory DuckDB of their own: the file is split into lines
and fields in SQL by trec_eval's rules (fields separated by blanks; a ``#`` in the first column makes a comment,
and after a comment line the next line is read as data whatever it starts with, as trec_eval reads it), the run
by the one TREC run reader (``contract/trec_csv.py``, the general reader when it must). Every preference is a row
(a self-join per query and judgment group; the transitive preferences of a group with several sub-groups by a
recursive query), so the memory is the number of preferences, as trec_eval's arrays are.

How trec_eval counts (``form_prefs_counts.c``): the documents a query's preferences name are numbered, those the
run retrieved (within ``-M``) first in the run's order (score descending, then docno ascending: the order this
file of trec_eval sorts by), then the others by docno; a preference i > j is fulfilled when i is numbered before
j and i was retrieved, and counts as "retrieved" (both retrieved), "implied" (one) or "not occurring" (neither).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.trec_eval.plan import JG, PREFS, TrecEvalError
from ragtriage.trec_eval.plan import PREF_NICKNAMES as NICKNAMES

if TYPE_CHECKING:
    import duckdb

    from ragtriage.trec_eval.plan import Options

#: the relevance formats ``-R`` takes (trec_eval's ``formats.c``)
REL_FORMATS = ("qrels", "prefs", "qrels_prefs", "qrels_jg")

SUMMED = PREFS[:3]
ORDER = ("runid", "num_q", *PREFS, *JG)
P_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RPREC_CUTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

# a field is a run of bytes that are not C's isspace; lines are split at LF first
_FIELD = "[^ \t\x0b\x0c\r]+"
_COLUMNS = {"prefs": "qid jg jsg docno rel", "qrels_prefs": "qid jg docno rel", "qrels_jg": "qid jg docno rel"}


@dataclass(frozen=True)
class Line:
    """One printed measure: ``name`` as trec_eval prints it, ``col`` its column of the per-query table."""

    name: str
    col: str
    long: bool = False


#: trec_eval's first stderr line when a measure's judgments are of another format than -R's
_CANT = {
    "qrels": "trec_eval.form_res_qrels: rel_info format not qrels or results format not trec_results",
    "prefs": "trec_eval.form_prefs_info: prefs_info format not (prefs or qrels_prefs) or results format not "
    "trec_results",
    "qrels_jg": "trec_eval: rel_info format not qrels_jg or results format not trec_results",
}


def wrong_format(measures: list[str], fmt: str) -> TrecEvalError | None:
    """trec_eval's refusal (exit 4, at its first query, once both files are read) for the first measure ``-m``
    marks, in its measure table's order, that judgments of ``-R fmt`` cannot feed; None when every one fits."""
    from ragtriage.trec_eval.plan import NICKNAMES as CORE_NICKNAMES
    from ragtriage.trec_eval.plan import ORDER as CORE

    table = (*CORE, *PREFS, *JG)
    names = {n for arg in measures or ["official"] for n in _expand(arg.partition(".")[0], CORE_NICKNAMES)}
    for name in sorted(names & set(table), key=table.index):
        kind = "prefs" if name in PREFS else "qrels_jg" if name in JG else "qrels"
        if name in ("runid", "num_q") or fmt == kind or (kind == "prefs" and fmt == "qrels_prefs"):
            continue
        return TrecEvalError(f"{_CANT[kind]}\ntrec_eval: Can't calculate measure '{name}'", 4)
    return None


def _expand(name: str, core_nicknames: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The measures a ``-m`` name marks: a nickname's members, else the name itself."""
    return NICKNAMES.get(name) or core_nicknames.get(name) or (name,)


def run_other_format(rel: Path, run: Path, opts: Options) -> tuple[str, str | None, int]:
    """(stdout, refusal or None, exit code) of trec_eval ``-R`` (``opts.rel_format``) over ``rel`` and ``run``:
    the lines of the queries before a query trec_eval stops at, then that refusal (exit 4)."""
    import duckdb

    from ragtriage.store.memory_cap import cap_in_memory

    fmt = opts.rel_format
    lines = _plan(opts.measures, fmt)
    if fmt not in REL_FORMATS:
        raise TrecEvalError(f"trec_eval: Illegal rel_format '{fmt}'", 2)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        cap_in_memory(con)
        _read_rel(con, rel, fmt)
        _read_run(con, run)
        refusal = wrong_format(opts.measures, fmt)
        if refusal is not None:
            raise refusal
        _lists(con, opts.max_docs, ascending=fmt != "qrels_jg")
        failing = _failing(con, opts.complete, fmt)
        if fmt == "qrels_jg":
            _jg_values(con, lines, opts.level, opts.judged_only)
        else:
            cycle = _prefs_batched(con)
            if cycle is not None and (failing is None or cycle < failing[0]):
                failing = (cycle, "its preferences contradict each other (where trec_eval aborts)")
        text = _per_query_text(con, lines, failing[0] if failing else None) if opts.per_query else ""
        if failing:
            from ragtriage.safe_text import visible

            qid, why = failing
            return text, f"trec-eval: query {visible(qid)!r}: {visible(why)}; trec_eval stops here (exit 4)", 4
        if opts.summary:
            text += _summary_text(con, lines)
        return text, None, 0
    finally:
        con.close()


def _plan(measures: list[str], fmt: str) -> list[Line]:
    """The printed lines for ``-m`` values ``measures`` under ``-R fmt``, in trec_eval's order. A measure of
    the other formats (``official``, the default, included) trec_eval cannot calculate on these judgments: exit 4,
    as trec_eval exits at the first query."""
    from ragtriage.trec_eval.plan import NICKNAMES as CORE_NICKNAMES
    from ragtriage.trec_eval.plan import ORDER as CORE
    from ragtriage.trec_eval.plan import UNSUPPORTED, _double_cuts, _long_cuts

    names: set[str] = set()
    params: dict[str, str] = {}
    for arg in measures or ["official"]:
        name, dot, rest = arg.partition(".")
        if dot and not rest:
            raise TrecEvalError(f"illegal measure '{arg}': parameters after '.' are empty", 1)
        if dot:
            params.setdefault(name, rest)
        if name in NICKNAMES:
            names.update(NICKNAMES[name])
        elif name in ORDER:
            names.add(name)
        elif name in CORE or name in CORE_NICKNAMES or name in UNSUPPORTED:
            names.add(f"\0{name}")
        else:
            raise TrecEvalError(f"illegal measure '{arg}': no trec_eval measure or nickname of that name", 1)
    family = JG if fmt == "qrels_jg" else PREFS
    names = {n for n in names if not n.startswith("\0") and (n in family or n not in (*PREFS, *JG))}
    out: list[Line] = []
    for name in (n for n in ORDER if n in names):
        if name == "P_avgjg":
            out += [Line(f"P_avgjg_{k}", f"P_avgjg_{k}") for k in _long_cuts(name, params.get(name), P_CUTS)]
        elif name == "Rprec_mult_avgjg":
            cuts = _double_cuts(name, params.get(name), RPREC_CUTS)
            out += [Line(f"Rprec_mult_avgjg_{x:3.2f}", f"Rprec_mult_avgjg_{x!r}") for x in cuts]
        else:
            out.append(Line(name, name, long=name in (*SUMMED, "num_q")))
    return out


def _read_rel(con: duckdb.DuckDBPyConnection, path: Path, fmt: str) -> None:
    """``rel_in(qid, jg, jsg, docno, rel, line)`` from a prefs, qrels (as prefs: the second column is the
    judgment group, one sub-group) or qrels_jg file, split as trec_eval splits it; the first malformed line is
    refused as trec_eval refuses it (exit 2), and so is a level that is not a finite number (trec_eval's atof
    reads it as 0), a qrels_jg grade that is not an integer, and a docno twice in one qrels_jg group."""
    from ragtriage.trec_eval.read import readable

    readable(path, fmt)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrecEvalError(f"'{path}': byte {exc.start + 1} is not UTF-8 text", 2) from None
    del data
    cols = _COLUMNS[fmt].split()
    con.execute(
        """CREATE TEMP TABLE lines AS
           WITH t AS (SELECT string_split($text, chr(10)) AS l),
           u AS (SELECT unnest(l) AS line, generate_subscripts(l, 1) AS n, len(l) AS total FROM t),
           v AS (SELECT n, line, starts_with(line, '#') AS hash FROM u WHERE NOT (n = total AND line = '')),
           w AS (SELECT *, n - row_number() OVER (PARTITION BY hash ORDER BY n) AS island FROM v)
           SELECT n, row_number() OVER (ORDER BY n) AS rec, regexp_extract_all(line, $field) AS f
           FROM (SELECT *, row_number() OVER (PARTITION BY hash, island ORDER BY n) AS pos FROM w)
           WHERE NOT (hash AND pos % 2 = 1)""",
        {"text": text, "field": _FIELD},
    )
    del text
    bad = con.execute(f"SELECT n, rec, len(f) FROM lines WHERE len(f) <> {len(cols)} ORDER BY n LIMIT 1").fetchall()
    if bad:
        n, rec, found = bad[0]
        raise TrecEvalError(
            f"trec_eval.get_{fmt}: Malformed line {rec}\ntrec_eval: Quit in file '{path}'\n"
            f"trec-eval: {path}:{n}: expected {len(cols)} fields ({' '.join(cols)}), found {found}",
            2,
        )
    jsg = "f[3]" if fmt == "prefs" else "'0'"
    rel = f"f[{len(cols)}]"
    docno = f"f[{len(cols) - 1}]"
    kind = "BIGINT" if fmt == "qrels_jg" else "DOUBLE"
    ok = f"regexp_full_match({rel}, '[+-]?[0-9]+')" if fmt == "qrels_jg" else f"isfinite(TRY_CAST({rel} AS DOUBLE))"
    wrong = con.execute(f"SELECT n, {rel} FROM lines WHERE NOT coalesce({ok}, false) ORDER BY n LIMIT 1").fetchall()
    if wrong:
        what = "an integer" if fmt == "qrels_jg" else "a finite number"
        raise TrecEvalError(f"{path}:{wrong[0][0]}: rel: '{wrong[0][1]}' is not {what}", 2)
    con.execute(
        f"""CREATE TEMP TABLE rel_in AS SELECT f[1] AS qid, f[2] AS jg, {jsg} AS jsg, {docno} AS docno,
            CAST({rel} AS {kind}) AS rel, n AS line FROM lines"""
    )
    con.execute("DROP TABLE lines")
    if fmt == "qrels_jg":
        twice = con.execute(
            "SELECT min(line), qid, jg, docno FROM rel_in GROUP BY qid, jg, docno HAVING count(*) > 1 "
            "ORDER BY 1 LIMIT 1"
        ).fetchall()
        if twice:
            line, qid, jg, docno = twice[0]
            raise TrecEvalError(f"{path}:{line}: docno '{docno}' twice in query '{qid}' group '{jg}'", 2)
    con.execute("CREATE TEMP TABLE q AS SELECT DISTINCT qid FROM rel_in")


def _read_run(con: duckdb.DuckDBPyConnection, run: Path) -> None:
    """``stg_run`` by the one TREC run reader (the general one when the fast one cannot take the file)."""
    from ragtriage.contract.trec_csv import read_run
    from ragtriage.store.load_memory import _general_run
    from ragtriage.trec_eval.read import readable

    readable(Path(run), "run")
    if read_run(con, run, "stg_run", temp=False) is None:
        _general_run(con, run)


def _lists(con: duckdb.DuckDBPyConnection, max_docs: int | None, *, ascending: bool) -> None:
    """``r(qid, docno, rk)``: each evaluated query's list ranked as trec_eval ranks it for these formats, ties of
    score broken by docno ascending (prefs) or descending (qrels_jg), the first ``-M`` kept."""
    cut = "" if max_docs is None else f"QUALIFY rk <= {int(max_docs)}"
    order = "ASC" if ascending else "DESC"
    con.execute(
        f"""CREATE TEMP TABLE r AS SELECT case_id AS qid, document_id AS docno,
            row_number() OVER (PARTITION BY case_id ORDER BY score DESC, document_id {order}) AS rk
            FROM stg_run WHERE case_id IN (SELECT qid FROM q) {cut}"""
    )


def _failing(con: duckdb.DuckDBPyConnection, complete: bool, fmt: str) -> tuple[str, str] | None:
    """(query, why) of the first query (byte order) trec_eval cannot evaluate, or None. Besides a query absent
    from the run (without ``-c``) and a docno twice in a list, a preference file can contradict itself: one
    document at two levels of one sub-group, a document both relevant (level > 0) and not (0) in one group, or a
    cycle of preferences (where trec_eval aborts)."""
    checks = ["SELECT qid, 'a document id twice in its ranked list: ' || min(docno) FROM r GROUP BY qid, docno "
              "HAVING count(*) > 1"]  # fmt: skip
    if not complete:
        checks.append(
            "SELECT qid, 'in the judgments but not in the run (use -c to score it 0)' FROM q "
            "WHERE qid NOT IN (SELECT case_id FROM stg_run)"
        )
    if fmt != "qrels_jg":
        checks.append(
            "SELECT qid, 'document ' || min(docno) || ' at two levels of one sub-group' FROM rel_in "
            "SEMI JOIN (SELECT qid, jg FROM rel_in GROUP BY ALL HAVING count(DISTINCT jsg) = 1) USING (qid, jg) "
            "GROUP BY qid, jg, jsg, docno HAVING count(DISTINCT rel) > 1"
        )
        checks.append(
            "SELECT qid, 'document ' || min(docno) || ' both relevant and not relevant in one group' FROM "
            "(SELECT *, lag(rel) OVER (PARTITION BY qid, jg, docno ORDER BY jsg, rel DESC) AS before FROM rel_in) "
            "WHERE (before > 0 AND rel = 0) OR (before = 0 AND rel > 0) GROUP BY qid"
        )
    found = con.execute(f"SELECT * FROM ({' UNION ALL '.join(checks)}) ORDER BY 1, 2 LIMIT 1").fetchall()
    return (str(found[0][0]), str(found[0][1])) if found else None


#: the preference rows a batch of queries may make at most (each query's count estimated from its group sizes);
#: a query beyond it is a batch of its own, so the memory is bounded by the largest query, as trec_eval's arrays
PAIRS_PER_BATCH = 4_000_000


def _prefs_batched(con: duckdb.DuckDBPyConnection) -> str | None:
    """``vals`` over every query, computed by :func:`_prefs_values` batch by batch of queries (in byte order), so
    the preference rows of one batch only are held at a time; returns the first query with a cycle, or None."""
    con.execute(
        f"""CREATE TEMP TABLE batches AS SELECT qid, CAST(floor(coalesce(sum(est) OVER (ORDER BY qid ROWS BETWEEN
            UNBOUNDED PRECEDING AND 1 PRECEDING), 0) / {PAIRS_PER_BATCH}) AS BIGINT) AS b
            FROM (SELECT qid, sum(n * n) AS est FROM (SELECT qid, count(*) AS n FROM rel_in GROUP BY qid, jg)
                  GROUP BY qid)"""
    )
    cycles = []
    for (b,) in con.execute("SELECT DISTINCT b FROM batches ORDER BY b").fetchall():
        batch = f"(SELECT qid FROM batches WHERE b = {int(b)})"
        con.execute(f"CREATE OR REPLACE TEMP VIEW q_b AS SELECT qid FROM q WHERE qid IN {batch}")
        con.execute(f"CREATE OR REPLACE TEMP VIEW rel_b AS SELECT * FROM rel_in WHERE qid IN {batch}")
        cycles.append(_prefs_values(con))
        con.execute(
            "CREATE TEMP TABLE vals AS SELECT * FROM vals_b" if b == 0 else "INSERT INTO vals SELECT * FROM vals_b"
        )
    found = [c for c in cycles if c is not None]
    return min(found) if found else None


def _prefs_values(con: duckdb.DuckDBPyConnection) -> str | None:
    """``vals``: one row per query with every preference measure (trec_eval's ``form_prefs_counts.c`` and
    ``m_prefs_*.c``); returns the first query whose preferences form a cycle, or None."""
    # document numbers: retrieved judged documents 0.. in run order, then the other judged ones by docno
    con.execute(
        """CREATE OR REPLACE TEMP TABLE dret AS
           SELECT r.qid, r.docno, row_number() OVER (PARTITION BY r.qid ORDER BY r.rk) - 1 AS d
           FROM r SEMI JOIN (SELECT DISTINCT qid, docno FROM rel_b) j ON j.qid = r.qid AND j.docno = r.docno"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE njr AS
           SELECT qid, count(d) AS njr FROM q_b LEFT JOIN dret USING (qid) GROUP BY qid"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE docid AS SELECT qid, docno, d FROM dret UNION ALL
           SELECT qid, docno, njr + row_number() OVER (PARTITION BY qid ORDER BY docno) - 1 FROM
           (SELECT DISTINCT qid, docno FROM rel_b ANTI JOIN dret USING (qid, docno)) JOIN njr USING (qid)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE p AS
           SELECT x.qid, x.jg, x.jsg, x.rel, d.d FROM rel_b x JOIN docid d USING (qid, docno)"""
    )
    # a group of one sub-group: classes of equal level, every document of a higher class preferred to every one
    # of a lower (lines counted as often as given); of several sub-groups: each sub-group's preferences, closed
    # under transitivity, each pair once
    con.execute(
        """CREATE OR REPLACE TEMP TABLE jgk AS SELECT qid, jg, count(DISTINCT jsg) > 1 AS pa, min(rel) AS minrel,
           count(*) > count(DISTINCT d) AS dup FROM p GROUP BY qid, jg"""
    )
    # a query of one group, each document in it once, has each document pair once at most: its prefs_pair*
    # equal its prefs_simp*, and its one-sub-group preferences are counted without being kept
    con.execute(
        """CREATE OR REPLACE TEMP TABLE cq AS SELECT qid FROM jgk GROUP BY qid HAVING count(*) > 1 OR bool_or(dup)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP VIEW ecv AS
           SELECT a.qid, a.jg, a.d AS i, b.d AS j, b.rel = k.minrel AS tolast
           FROM p a JOIN jgk k ON k.qid = a.qid AND k.jg = a.jg AND NOT k.pa
           JOIN p b ON b.qid = a.qid AND b.jg = a.jg AND a.rel > b.rel WHERE a.d <> b.d"""
    )
    con.execute("CREATE OR REPLACE TEMP TABLE pp AS SELECT * FROM ecv WHERE qid IN (SELECT qid FROM cq)")
    con.execute(
        """CREATE OR REPLACE TEMP TABLE pae AS SELECT DISTINCT a.qid, a.jg, a.d AS i, b.d AS j
           FROM p a JOIN jgk k ON k.qid = a.qid AND k.jg = a.jg AND k.pa
           JOIN p b ON b.qid = a.qid AND b.jg = a.jg AND b.jsg = a.jsg AND a.rel > b.rel"""
    )
    con.execute(
        """INSERT INTO pp WITH RECURSIVE c(qid, jg, i, j) AS (
               SELECT qid, jg, i, j FROM pae
               UNION SELECT c.qid, c.jg, c.i, e.j FROM c JOIN pae e ON e.qid = c.qid AND e.jg = c.jg AND e.i = c.j)
           SELECT qid, jg, i, j, NULL FROM c WHERE i <> j"""
    )
    cycle = con.execute(
        "SELECT min(a.qid) FROM pp a JOIN pp b ON b.qid = a.qid AND b.jg = a.jg AND b.i = a.j AND b.j = a.i "
        "WHERE a.tolast IS NULL"
    ).fetchall()[0][0]
    # the level of a document of a several-sub-group group: the last one given (trec_eval's rel_array)
    con.execute(
        """CREATE OR REPLACE TEMP TABLE parel AS SELECT qid, jg, d, rel FROM (SELECT p.*, row_number() OVER
           (PARTITION BY p.qid, p.jg, p.d ORDER BY p.jsg DESC, p.rel ASC) AS o
           FROM p SEMI JOIN jgk k ON k.qid = p.qid AND k.jg = p.jg AND k.pa) WHERE o = 1"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE jgr AS
           SELECT p.qid, p.jg, count(*) FILTER (rel > 0) AS nrel, count(*) FILTER (rel > 0 AND d < njr) AS nrel_ret,
                  count(*) FILTER (rel <= 0) AS nnon, count(*) FILTER (rel <= 0 AND d < njr) AS nnon_ret
           FROM p JOIN njr USING (qid) SEMI JOIN jgk k ON k.qid = p.qid AND k.jg = p.jg AND NOT k.pa GROUP BY ALL
           UNION ALL
           SELECT qid, jg, count(*) FILTER (rel > 0), count(*) FILTER (rel > 0 AND d < njr),
                  count(*) FILTER (rel = 0), count(*) FILTER (rel = 0 AND d < njr)
           FROM parel JOIN njr USING (qid) GROUP BY ALL"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE jgc AS
           SELECT k.qid, k.jg, k.pa, n.njr, g.nrel, g.nrel_ret, g.nnon, g.nnon_ret,
                  count(pp.i) FILTER (i < j AND j < njr) AS fr,
                  count(pp.i) FILTER (i < j AND i < njr AND j >= njr) AS fi,
                  count(pp.i) FILTER (i > j AND i < njr) AS a2,
                  count(pp.i) FILTER (i > j AND i >= njr AND j < njr) AS a4,
                  count(pp.i) FILTER (i >= njr AND j >= njr) AS nocc,
                  -- the Rnonrel recount's pairs of classes but the last (see _recalculated)
                  count(pp.i) FILTER (NOT tolast AND i < j AND i < njr) AS ful1_all,
                  count(pp.i) FILTER (NOT tolast) AS poss1_all,
                  count(pp.i) FILTER (NOT tolast AND i < j AND j < njr) AS ful1_ret,
                  count(pp.i) FILTER (NOT tolast AND i < njr AND j < njr) AS poss1_ret
           FROM jgk k JOIN njr n USING (qid) JOIN jgr g USING (qid, jg)
           LEFT JOIN (SELECT * FROM ecv UNION ALL SELECT * FROM pp WHERE tolast IS NULL) pp USING (qid, jg)
           GROUP BY ALL"""
    )
    _recalculated(con)
    ratio = "CASE WHEN ({d}) = 0 THEN 'nan'::DOUBLE ELSE ({n})::DOUBLE / ({d}) END"
    all_r = ratio.format(n="fr + fi + nrel_ret * (nrel - nnon)", d="fr + a2 + fi + a4 + nocc + nrel * (nrel - nnon)")
    ret_r = ratio.format(n="fr + nrel_ret * (nrel_ret - nnon_ret)", d="fr + a2 + nrel * (nrel_ret - nnon_ret)")
    # a group with nothing left to count (no recount row) gives 0/0: NaN, which makes trec_eval's sum NaN
    re_all = ratio.format(n="ful1_all + coalesce(ful_all, 0)", d="poss1_all + coalesce(poss_all, 0)")
    re_ret = ratio.format(n="ful1_ret + coalesce(ful_ret, 0)", d="poss1_ret + coalesce(poss_ret, 0)")
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE jgt AS SELECT c.*,
            CASE WHEN nrel >= nnon THEN {all_r} ELSE {re_all} END AS rn,
            CASE WHEN nrel_ret >= nnon_ret THEN {ret_r} ELSE {re_ret} END AS rn_ret
            FROM jgc c LEFT JOIN recalc USING (qid, jg)"""
    )

    def simp(n: str, d: str) -> str:
        return f"CASE WHEN sum({d}) > 0 THEN sum({n})::DOUBLE / sum({d}) ELSE 0 END"

    def avgjg(n: str, d: str) -> str:
        term = f"CASE WHEN {d} > 0 THEN ({n})::DOUBLE / ({d}) ELSE 0 END"
        return f"CASE WHEN sum({term}) > 0 THEN sum({term}) / count(*) ELSE 0 END"

    def pair(simple: str, col: str) -> str:  # a query without a row of ``pairs`` (not in ``cq``): its simp
        return f"CASE WHEN bool_or(pr.qid IS NULL) THEN {simple} ELSE coalesce(any_value(pr.{col}), 0) END"

    def rnonrel(col: str) -> str:
        return f"CASE WHEN bool_or(isnan({col})) THEN 0 WHEN sum({col}) > 0 THEN sum({col}) / count(*) ELSE 0 END"

    con.execute(
        """CREATE OR REPLACE TEMP TABLE pairs AS SELECT u.qid,
               CASE WHEN lo < njr THEN coalesce(c_lh, 0)::DOUBLE / (coalesce(c_lh, 0) + coalesce(c_hl, 0)) ELSE 0 END
               AS term, lo < njr AS imp, hi < njr AS ret
           FROM (SELECT qid, least(i, j) AS lo, greatest(i, j) AS hi, count(*) FILTER (i < j) AS c_lh,
                        count(*) FILTER (i > j) AS c_hl FROM pp SEMI JOIN cq USING (qid) GROUP BY qid, lo, hi) u
           JOIN njr USING (qid)"""
    )
    poss, ful = "fr + a2 + fi + a4 + nocc", "fr + fi"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE vals_b AS SELECT t.qid,
              sum({poss}) AS prefs_num_prefs_poss, sum({ful}) AS prefs_num_prefs_ful,
              sum(fr) AS prefs_num_prefs_ful_ret, {simp(ful, poss)} AS prefs_simp, {avgjg(ful, poss)} AS prefs_avgjg,
              {rnonrel("rn")} AS prefs_avgjg_Rnonrel,
              {simp("fr", "fr + a2")} AS prefs_simp_ret, {avgjg("fr", "fr + a2")} AS prefs_avgjg_ret,
              {rnonrel("rn_ret")} AS prefs_avgjg_Rnonrel_ret, {simp(ful, "fr + a2 + fi + a4")} AS prefs_simp_imp,
              {avgjg(ful, "fr + a2 + fi + a4")} AS prefs_avgjg_imp,
              {pair(simp(ful, poss), "pair")} AS prefs_pair,
              {pair(simp("fr", "fr + a2"), "pair_ret")} AS prefs_pair_ret,
              {pair(simp(ful, "fr + a2 + fi + a4"), "pair_imp")} AS prefs_pair_imp
            FROM jgt t LEFT JOIN (SELECT qid, avg(term) AS pair, avg(term) FILTER (ret) AS pair_ret,
                                         avg(term) FILTER (imp) AS pair_imp FROM pairs GROUP BY qid) pr
                 ON pr.qid = t.qid
            GROUP BY t.qid"""
    )
    return None if cycle is None else str(cycle)


def _recalculated(con: duckdb.DuckDBPyConnection) -> None:
    """``recalc``: prefs_avgjg_Rnonrel's and its _ret variant's counts for a group with more non-relevant documents
    N than relevant R, where trec_eval keeps only the first R non-relevant ones (in document order) and recounts,
    as its ``recalculate`` does. For a one-sub-group group that recount is: the pairs of classes but the last,
    plus every document of the group against the first R documents of its last (lowest) class; a pair i, j
    fulfilled when i is numbered before j and retrieved. The _ret variant counts retrieved documents only, R
    being the retrieved relevant ones (yet trec_eval keeps the first num_rel non-relevant ones of a
    several-sub-group group)."""
    con.execute(
        """CREATE OR REPLACE TEMP TABLE ec_new AS
           SELECT qid, jg, d, o <= nrel AS keep_all, o <= nrel_ret AND d < njr AS keep_ret FROM (
             SELECT p.qid, p.jg, p.d, row_number() OVER (PARTITION BY p.qid, p.jg ORDER BY p.d) AS o, c.nrel,
                    c.nrel_ret, c.njr
             FROM p JOIN jgk k ON k.qid = p.qid AND k.jg = p.jg AND NOT k.pa AND p.rel = k.minrel
             JOIN jgc c ON c.qid = p.qid AND c.jg = p.jg
             WHERE c.nrel < c.nnon OR c.nrel_ret < c.nnon_ret)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE pa_keep AS
           SELECT qid, jg, d, rel <> 0 OR o_all <= nrel AS keep_all, d < njr AND (rel <> 0 OR o_ret <= nrel) AS keep_ret
           FROM (SELECT x.*, c.nrel, c.njr,
                   row_number() OVER (PARTITION BY x.qid, x.jg, x.rel = 0 ORDER BY x.d) AS o_all,
                   row_number() OVER (PARTITION BY x.qid, x.jg, x.rel = 0 AND x.d < c.njr ORDER BY x.d) AS o_ret
                 FROM parel x JOIN jgc c ON c.qid = x.qid AND c.jg = x.jg
                 WHERE c.nrel < c.nnon OR c.nrel_ret < c.nnon_ret)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE recalc_parts AS
           -- one sub-group: every line x of the group against the kept documents y of its last class, x before y
           -- (and retrieved): for each y the lines numbered below a bound, read off one running count per group
           WITH ev AS (
               SELECT x.qid, x.jg, x.d AS bound, 1 AS line, false AS y_all, false AS y_ret
               FROM p x SEMI JOIN ec_new y ON y.qid = x.qid AND y.jg = x.jg
               UNION ALL SELECT y.qid, y.jg, least(y.d, c.njr), 0, true, false
               FROM ec_new y JOIN jgc c USING (qid, jg) WHERE y.keep_all
               UNION ALL SELECT qid, jg, d, 0, false, true FROM ec_new WHERE keep_ret),
           below AS (SELECT *, sum(line) OVER (PARTITION BY qid, jg ORDER BY bound, line ROWS UNBOUNDED PRECEDING)
                               AS n FROM ev)
           SELECT b.qid, b.jg, coalesce(sum(n) FILTER (y_all), 0) AS ful_all,
                  count(*) FILTER (y_all) * any_value(c.nrel + c.nnon) AS poss_all,
                  coalesce(sum(n) FILTER (y_ret), 0) AS ful_ret,
                  count(*) FILTER (y_ret) * any_value(c.nrel_ret + c.nnon_ret) AS poss_ret
           FROM below b JOIN jgc c USING (qid, jg) GROUP BY b.qid, b.jg
           UNION ALL
           -- several sub-groups: the closed preferences between kept documents
           SELECT pp.qid, pp.jg, count(*) FILTER (a.keep_all AND b.keep_all AND i < c.njr AND i < j),
                  count(*) FILTER (a.keep_all AND b.keep_all),
                  count(*) FILTER (a.keep_ret AND b.keep_ret AND i < j), count(*) FILTER (a.keep_ret AND b.keep_ret)
           FROM pp JOIN pa_keep a ON a.qid = pp.qid AND a.jg = pp.jg AND a.d = pp.i
           JOIN pa_keep b ON b.qid = pp.qid AND b.jg = pp.jg AND b.d = pp.j
           JOIN jgc c ON c.qid = pp.qid AND c.jg = pp.jg
           WHERE pp.tolast IS NULL GROUP BY ALL"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE recalc AS SELECT qid, jg, sum(ful_all) AS ful_all, sum(poss_all) AS poss_all,
           sum(ful_ret) AS ful_ret, sum(poss_ret) AS poss_ret FROM recalc_parts GROUP BY qid, jg"""
    )


def _jg_values(con: duckdb.DuckDBPyConnection, lines: list[Line], level: int, judged_only: bool) -> None:
    """``vals``: map, P and Rprec_mult of each judgment group's judgments, averaged over the query's groups
    (trec_eval's ``form_res_rels_jg.c``, ``m_map_avgjg.c``, ``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``).
    A group's list is the whole run list (``-J``: its judged documents, graded 0 or more, closed up)."""
    # trec_eval's value of a listed document: its grade, -1 not in the group's judgments, -2 graded below 0
    from ragtriage.contract.relevance import is_judged, is_relevant

    value = f"CASE WHEN x.rel IS NULL THEN -1 WHEN NOT {is_judged('x.rel')} THEN -2 ELSE x.rel END"
    judged = f"AND {is_judged('x.rel')} WHERE x.rel IS NOT NULL" if judged_only else ""
    con.execute(
        f"""CREATE TEMP TABLE lst AS
            SELECT k.qid, k.jg, row_number() OVER (PARTITION BY k.qid, k.jg ORDER BY r.rk) AS rk,
                   {is_relevant(value, int(level))} AS rel
            FROM (SELECT DISTINCT qid, jg FROM rel_in) k JOIN r USING (qid)
            LEFT JOIN rel_in x ON x.qid = k.qid AND x.jg = k.jg AND x.docno = r.docno {judged}"""
    )
    counts = ["count(l.rk) AS num_ret", "count(l.rk) FILTER (l.rel) AS rel_ret", "coalesce(sum(l.prec), 0) AS ap_sum"]
    cols = ["avg(CASE WHEN rel_ret > 0 THEN ap_sum / num_rel ELSE 0 END) AS map_avgjg"]
    for n, line in enumerate(lines):
        if line.col.startswith("P_avgjg_"):
            k = int(line.col.removeprefix("P_avgjg_"))
            counts.append(f"count(l.rk) FILTER (l.rel AND l.rk <= {k}) AS top{n}")
            cols.append(f'avg(top{n}::DOUBLE / {k}) AS "{line.col}"')
        elif line.col.startswith("Rprec_mult_avgjg_"):
            x = float(line.col.removeprefix("Rprec_mult_avgjg_"))
            c = f"CAST(trunc({x!r}::DOUBLE * num_rel + 0.9) AS BIGINT)"
            counts.append(f"{c} AS c{n}, count(l.rk) FILTER (l.rel AND l.rk <= {c}) AS top{n}")
            value = f"CASE WHEN c{n} > num_ret THEN rel_ret::DOUBLE / c{n} WHEN c{n} > 0 THEN top{n}::DOUBLE / c{n} END"
            cols.append(f'avg(coalesce({value}, 0)) AS "{line.col}"')
    # each group once: its relevant judgments, and its list's counts at every cutoff in one pass
    con.execute(
        f"""CREATE TEMP TABLE grp AS
            SELECT g.qid, g.jg, g.num_rel, {", ".join(counts)}
            FROM (SELECT qid, jg, count(*) FILTER ({is_judged("rel")} AND {is_relevant("rel", int(level))}) AS num_rel
                  FROM rel_in GROUP BY qid, jg) g
            LEFT JOIN (SELECT *, CASE WHEN rel THEN (count(*) FILTER (rel) OVER w)::DOUBLE / rk END AS prec FROM lst
                       WINDOW w AS (PARTITION BY qid, jg ORDER BY rk ROWS UNBOUNDED PRECEDING)) l USING (qid, jg)
            GROUP BY g.qid, g.jg, g.num_rel"""
    )
    con.execute(f"CREATE TEMP TABLE vals AS SELECT qid, {', '.join(cols)} FROM grp GROUP BY qid")


def _value_columns(lines: list[Line]) -> list[Line]:
    return [line for line in lines if line.name not in ("runid", "num_q")]


def _per_query_text(con: duckdb.DuckDBPyConnection, lines: list[Line], before: str | None) -> str:
    """trec_eval -q's lines: each query (byte order) with its measures in order; only queries before ``before``."""
    from ragtriage.contract.staging import sql_str
    from ragtriage.metrics.context import over_arrow
    from ragtriage.safe_text import visible_array

    shown = _value_columns(lines)
    if not shown:
        return ""
    vals = con.sql("SELECT * FROM vals").to_arrow_table()
    vals = vals.append_column("shown", visible_array(vals.column("qid")))
    parts = [
        f"""SELECT qid, {i} AS idx, printf('%-22s\t%s\t{"%d" if line.long else "%6.4f"}', {sql_str(line.name)}, shown,
            {f'CAST(trunc("{line.col}") AS BIGINT)' if line.long else f'"{line.col}"'}) AS line FROM vals"""
        for i, line in enumerate(shown)
    ]
    where, params = ("WHERE qid < $before", {"before": before}) if before is not None else ("", {})
    sql = f"SELECT string_agg(line, chr(10) ORDER BY qid, idx) AS t FROM ({' UNION ALL '.join(parts)}) {where}"
    text = over_arrow(sql, params, vals=vals).column("t")[0].as_py() or ""
    return f"{text}\n" if text else ""


def _summary_text(con: duckdb.DuckDBPyConnection, lines: list[Line]) -> str:
    """The ``all`` lines: runid (the tag of the run's last line), num_q, the counts summed, the rest averaged."""
    from ragtriage.safe_text import visible

    shown = _value_columns(lines)
    aggs = [f'sum("{x.col}")' if x.long else f'avg("{x.col}")' for x in shown]
    row = con.execute(f"SELECT count(*) {''.join(', ' + a for a in aggs)} FROM vals").fetchall()[0]
    tag = con.execute("SELECT tag FROM stg_run ORDER BY rowid DESC LIMIT 1").fetchall()
    values = dict(zip((x.col for x in shown), row[1:], strict=True))
    out = []
    for line in lines:
        if line.name == "runid":
            out.append(f"{'runid':<22}\tall\t{visible(tag[0][0] if tag else '')}\n")
        elif line.name == "num_q":
            out.append(f"{'num_q':<22}\tall\t{row[0]}\n")
        else:
            v = values[line.col] or 0
            out.append(f"{line.name:<22}\tall\t{int(v) if line.long else format(v, '6.4f')}\n")
    return "".join(out)
