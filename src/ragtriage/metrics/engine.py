"""The one measure engine: per-case values of any list of resolved measures (``metrics.measures.Measure``) on one
run and stage, in one DuckDB query. The fixed table (``per_case``), ``--measure`` strings and trec-compat
(``measure_eval``), and through them slices, compare, the gate, the report, the classifier and the TUI, all ask it.

Every measure is a function registered under its canonical name (:func:`register`) that writes the SQL of one
case's value from the columns a :class:`Builder` collects (each aggregate once however many measures read it).
Definitions follow trec_eval / ir_measures (docs/metrics.md "Measures by name"): relevant = ``is_relevant`` at
``rel`` (the dataset's threshold when left out); a unit with a negative grade is labelled but not judged, never
relevant and, as trec_eval's "unjudged in pool", is skipped by Bpref; DCG adds positive gains only
(``metrics.gain``).

The lists are read in one of two shapes, with the same values: every labelled unit at its position in the whole
list (``ranking.labelled_positions_sql``), or, for measures with a cutoff whose caller holds them, the
de-duplicated lists cut at the deepest cutoff (``ranking.cut_lists``).
Which cases count is the population's rule (``EvalContext.population_sql``), the same for every measure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import duckdb
import pyarrow as pa

from ragtriage.contract.relevance import derived_grades, is_judged_nonrelevant, is_relevant
from ragtriage.metrics.context import EvalContext, MetricsError, arrow
from ragtriage.metrics.gain import DEFAULT_GAIN, dcg_sql, gain_sql, ideal_dcg_sql, ideal_gains_sql
from ragtriage.metrics.measures import DCG_TO_GAIN, GAIN_TO_DCG, Measure
from ragtriage.metrics.ranking import has_repeats, labelled_positions_sql, positions_sql
from ragtriage.metrics.spans import span_cover
from ragtriage.metrics.trec_families import FAMILIES, Family, is_text
from ragtriage.store.connection import run_value
from ragtriage.store.load_memory import UNRANKED


def _tag(r: int) -> str:
    return str(r).replace("-", "m")


class Builder:
    """Collects the aggregate columns the measures need (each once): ``agg`` over a case's labelled rows
    ``(pos, grade)``, ``stats`` over its qrels ``q(unit_id, grade)``; values read ``a.<name>``, ``n.<name>`` and
    ``nret.num_ret`` (the de-duplicated list length)."""

    def __init__(self, threshold: int, trec: bool) -> None:
        self.threshold, self.trec = threshold, trec
        self.agg: dict[str, str] = {}
        self.stats: dict[str, str] = {}
        self.windows: dict[str, str] = {}  # columns added to each labelled row (:meth:`window`)
        self.spans: dict[str, str] = {}  # per-case span covers (:meth:`span`), a relation each

    def stat(self, name: str, sql: str) -> str:
        """A per-case aggregate over the case's qrels ``q``, named once."""
        self.stats[name] = sql
        return f"n.{name}"

    def aggregate(self, name: str, sql: str) -> str:
        """A per-case aggregate over the case's labelled rows, named once."""
        self.agg[name] = sql
        return f"a.{name}"

    def window(self, name: str, sql: str) -> str:
        """A running count or sum over each list's labelled rows in position order, the current row excluded unless
        ``sql`` says ``AND CURRENT``: a column of the labelled rows that aggregates read (trec_families)."""
        frame = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"
        if sql.endswith(" AND CURRENT"):
            sql, frame = sql.removesuffix(" AND CURRENT"), "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        self.windows[name] = f"coalesce({sql} OVER (PARTITION BY case_id ORDER BY pos {frame}), 0)"
        return name

    def nrel(self, r: int) -> str:
        """Relevant labels of the case at ``r``."""
        return self.stat(f"nrel_{_tag(r)}", f"count(q.unit_id) FILTER (WHERE {is_relevant('q.grade', r)})")

    def nonrel(self, r: int) -> str:
        """Judged non-relevant labels at ``r`` (a negative grade is "unjudged in pool" for trec_eval)."""
        return self.stat(f"nnon_{_tag(r)}", f"count(q.unit_id) FILTER (WHERE {is_judged_nonrelevant('q.grade', r)})")

    def hits(self, r: int, k: int | None) -> str:
        """Relevant results at ``r`` within ``k`` (the whole list for None)."""
        within = f" AND pos <= {k}" if k else ""
        hits = self.aggregate(f"h_{_tag(r)}_{k or 'all'}", f"count(*) FILTER (WHERE {is_relevant('grade', r)}{within})")
        return f"coalesce({hits}, 0)"

    def labelled(self, k: int | None) -> str:
        """Labelled results within ``k`` (``contract.relevance.labelled_units``: negative grades included), what
        ir_measures' Judged@k counts: every row of ``jp`` is a labelled unit."""
        labelled = self.aggregate(f"lab_{k or 'all'}", "count(*)" + (f" FILTER (WHERE pos <= {k})" if k else ""))
        return f"coalesce({labelled}, 0)"

    def rel_pos(self, r: int) -> str:
        """The positions of the relevant results at ``r``, ascending."""
        return self.aggregate(f"rp_{_tag(r)}", f"list(pos ORDER BY pos) FILTER (WHERE {is_relevant('grade', r)})")

    def first(self, r: int) -> str:
        """The position of the first relevant result at ``r`` (NULL without one)."""
        return self.aggregate(f"fr_{_tag(r)}", f"min(pos) FILTER (WHERE {is_relevant('grade', r)})")

    def dcg(self, gain: str, k: int | None) -> tuple[str, str]:
        """(DCG@k of the list, ideal DCG@k of the case) under ``gain``."""
        dcg = self.aggregate(f"dcg_{gain[:3]}_{k or 'all'}", dcg_sql(k, gain_sql(gain, "grade")))
        return dcg, ideal_dcg_sql(k, self.stat(f"gains_{gain[:3]}", ideal_gains_sql(gain, "q.grade")))

    def span(self, r: int, k: int) -> tuple[str, str, str]:
        """(evidence, retrieved, shared) characters of the case: the relevant evidence spans at ``r`` against the
        union of the spans of the top ``k`` results (``metrics.spans.span_cover``; dataset unit ``span``)."""
        name = f"sp_{_tag(r)}_{k}"
        self.spans[name] = span_cover(k, r)
        return f"coalesce({name}.ev, 0)", f"coalesce({name}.ret, 0)", f"coalesce({name}.inter, 0)"

    def bpref_before(self, r: int) -> str:
        """Judged non-relevant results ranked before each row (the Bpref window), beside the case's counts."""
        t = _tag(r)
        self.windows[f"nrel_{t}"], self.windows[f"nnon_{t}"] = self.nrel(r), self.nonrel(r)
        return self.window(f"nb_{t}", f"count(*) FILTER (WHERE {is_judged_nonrelevant('grade', r)})")

    def per_relevant(self, value: str, r: int) -> str:
        """``value`` for a case with relevant units at ``r``, else 0 (trec_eval's score, in every mode: which cases
        count is the population's rule, ``EvalContext.population_sql``, the same for every measure)."""
        return f"CASE WHEN {self.nrel(r)} > 0 THEN {value} ELSE 0.0 END"

    def expr(self, m: Measure) -> str:
        return _REGISTRY[m.name](self, m, m.rel if m.rel is not None else self.threshold)

    def named(self, name: str, rel: int | None) -> str:
        """The value of measure ``name`` over the whole list at ``rel`` (a family built on a core measure)."""
        return self.expr(Measure(name, rel=rel))

    def hit_rows(self) -> str:
        """The labelled rows, with the columns :meth:`window` (Bpref, trec_families) added to each row when asked."""
        if not self.windows:
            return "jp"
        cols = ", ".join(f"{v} AS {k}" for k, v in self.windows.items())
        return f"(SELECT jp.*, {cols} FROM jp JOIN n USING (case_id))"


#: (builder, measure, relevance threshold it is taken at) -> SQL of one case's value
MeasureSql = Callable[[Builder, Measure, int], str]
_REGISTRY: dict[str, MeasureSql] = {}


def register(name: str) -> Callable[[MeasureSql], MeasureSql]:
    """Register the SQL of measure ``name`` (a name of ``measures.SPECS``): the one place it is defined."""

    def add(fn: MeasureSql) -> MeasureSql:
        _REGISTRY[name] = fn
        return fn

    return add


@register("P")
def _p(b: Builder, m: Measure, r: int) -> str:
    return f"{b.hits(r, m.cutoff)} / {m.cutoff}.0"


@register("Success")
def _success(b: Builder, m: Measure, r: int) -> str:
    return f"CASE WHEN {b.hits(r, m.cutoff)} > 0 THEN 1.0 ELSE 0.0 END"


@register("RR")
def _rr(b: Builder, m: Measure, r: int) -> str:
    fr, k = b.first(r), m.cutoff
    return f"coalesce(1.0 / {fr}, 0.0)" if k is None else f"CASE WHEN {fr} <= {k} THEN 1.0 / {fr} ELSE 0.0 END"


@register("Judged")
def _judged(b: Builder, m: Measure, r: int) -> str:
    """ir_measures' Judged@k, under its name: labelled results (any label, a negative grade included) / min(k, list
    length); trec_eval's judged rule (grade >= 0) is another figure (``contract.relevance``)."""
    size = "nret.num_ret" if m.cutoff is None else f"least({m.cutoff}, nret.num_ret)"
    return f"CASE WHEN nret.num_ret > 0 THEN {b.labelled(m.cutoff)} / {size} ELSE 0.0 END"


@register("NumRet")
def _num_ret(b: Builder, m: Measure, r: int) -> str:
    return "coalesce(nret.num_ret, 0)"


@register("NumRelRet")
def _num_rel_ret(b: Builder, m: Measure, r: int) -> str:
    return b.hits(r, None)


@register("NumRel")
def _num_rel(b: Builder, m: Measure, r: int) -> str:
    return b.nrel(r)


@register("NumQ")
def _num_q(b: Builder, m: Measure, r: int) -> str:
    return "1"


@register("R")
def _recall(b: Builder, m: Measure, r: int) -> str:
    return b.per_relevant(f"{b.hits(r, m.cutoff)} / {b.nrel(r)}", r)


@register("AP")
def _ap(b: Builder, m: Measure, r: int) -> str:
    rp, k = b.rel_pos(r), m.cutoff
    cut = rp if k is None else f"list_filter({rp}, lambda p: p <= {k})"
    # the j-th relevant result at position p contributes precision j / p
    return b.per_relevant(f"coalesce(list_sum(list_transform({cut}, lambda p, j: j / p)), 0.0) / {b.nrel(r)}", r)


@register("Rprec")
def _rprec(b: Builder, m: Measure, r: int) -> str:
    nrel = b.nrel(r)
    return b.per_relevant(f"coalesce(len(list_filter({b.rel_pos(r)}, lambda p: p <= {nrel})), 0) / {nrel}", r)


@register("Bpref")
def _bpref(b: Builder, m: Measure, r: int) -> str:
    before, t = b.bpref_before(r), _tag(r)
    bpref = b.aggregate(
        f"bp_{t}",
        f"sum(CASE WHEN {before} > 0 THEN 1.0 - least({before}, nrel_{t}) / least(nnon_{t}, nrel_{t}) "
        f"ELSE 1.0 END) FILTER (WHERE {is_relevant('grade', r)})",
    )
    return b.per_relevant(f"coalesce({bpref}, 0.0) / {b.nrel(r)}", r)


@register("nDCG")
def _ndcg(b: Builder, m: Measure, r: int) -> str:
    # defined by its gains, as trec_eval's: a case without relevant units still scores from the grades below the
    # threshold (``with-relevant`` leaves such cases out of every measure alike)
    dcg, ideal = b.dcg(DCG_TO_GAIN[m.dcg or GAIN_TO_DCG[DEFAULT_GAIN]], m.cutoff)
    return f"coalesce({dcg} / nullif({ideal}, 0), 0.0)"


@register("SpanRecall")
def _span_recall(b: Builder, m: Measure, r: int) -> str:
    ev, _, inter = b.span(r, m.cutoff or 0)
    return b.per_relevant(f"{inter} / {ev}", r)


@register("SpanPrecision")
def _span_precision(b: Builder, m: Measure, r: int) -> str:
    _, ret, inter = b.span(r, m.cutoff or 0)
    return b.per_relevant(f"CASE WHEN {ret} > 0 THEN {inter} / {ret} ELSE 0.0 END", r)


@register("SpanIoU")
def _span_iou(b: Builder, m: Measure, r: int) -> str:
    ev, ret, inter = b.span(r, m.cutoff or 0)
    return b.per_relevant(f"{inter} / ({ev} + {ret} - {inter})", r)


def _family(fam: Family) -> MeasureSql:
    def sql(b: Builder, m: Measure, r: int) -> str:
        return fam.sql(b, m)

    return sql


# trec_eval's measures beyond the core set (all_trec), each defined once in metrics/trec_families.py
for _fam in FAMILIES.values():
    register(_fam.name)(_family(_fam))


def measures_sql(
    measures: Sequence[Measure],
    ctx: EvalContext,
    *,
    trec: bool,
    repeats: bool,
    by_score: bool,
    unranked: bool = False,
    cut: str | None = None,
) -> tuple[str, list[object]]:
    """The per-case query: one row per evaluated case, ``_no_relevant`` (none at the dataset threshold),
    ``_in_run`` and column ``m{i}`` = value of ``measures[i]`` (resolved). ``cut``: a relation
    ``(case_id, unit_id, pos)`` holding the lists at their de-duplicated positions down to the deepest cutoff
    (every measure has one) instead of the run's rows. ``unranked``: a run of
    ``store.load_memory`` (every row scored and of a case, every case in the population unless a split is asked),
    which needs no population filter on its rows and no NULL-safe order."""
    b = Builder(ctx.threshold, trec)
    exprs = [
        f"{b.expr(m)} AS m{i}" if is_text(m.name) else f"CAST({b.expr(m)} AS DOUBLE) AS m{i}"
        for i, m in enumerate(measures)
    ]
    b.nrel(ctx.threshold)
    span = ctx.unit == "span"
    if b.spans and not span:
        raise MetricsError(
            f"{', '.join(map(str, measures))}: span measures need a dataset of unit span (docs/spans.md)"
        )
    pop, params = ctx.population_sql(trec=trec)
    qrels, qrels_params = ctx.qrels_sql()
    stats = ",\n".join(f"{v} AS {k}" for k, v in b.stats.items())
    agg = ",\n".join(f"{v} AS {k}" for k, v in b.agg.items()) or "count(*) AS n_labelled"
    # a span dataset's qrels are its evidence spans (``ev``: the counts and the ideal list); each listed unit
    # takes its grade from them by the one rule, ``relevance.derived_grades`` (``q``: what the lists join)
    labels = f"""{"ev" if span else "q"} AS MATERIALIZED (SELECT case_id, unit_id, grade FROM {qrels}
              SEMI JOIN pop USING (case_id))"""
    if cut:
        rows = ""
        lists = f"""jp AS (SELECT l.case_id, l.pos, q.grade FROM {cut} l JOIN q USING (case_id, unit_id)),
        nret AS (SELECT case_id, count(*) AS num_ret FROM {cut} GROUP BY case_id)"""
        run_params: list[object] = []
        listed = f"SELECT case_id, unit_id, pos FROM {cut}"
    else:
        keep = "" if unranked and ctx.split is None else "AND case_id IN (SELECT case_id FROM pop)"
        rows = f"""r AS NOT MATERIALIZED (SELECT case_id, unit_id, rank, score FROM results
              WHERE run_id = ? AND stage = ? {keep}),"""
        lists = labelled_positions_sql(by_score=by_score, repeats=repeats, scored=unranked, depth=_depth(measures))
        run_params = [ctx.run_id, ctx.stage]
        listed = f"SELECT * FROM ({positions_sql('r')}) WHERE pos <= {max(m.cutoff or 0 for m in measures)}"
    if span:
        units = cut or "r"
        labels += f""",
    {rows}
    q AS MATERIALIZED ({derived_grades(units, "ev", ctx.min_overlap)})"""
        rows = ""
    spans = "".join(f",\n    {name} AS ({sql})" for name, sql in b.spans.items())
    joins = "".join(f" LEFT JOIN {name} USING (case_id)" for name in b.spans)
    spans = (f",\n    lr AS ({listed})" if b.spans else "") + spans
    sql = f"""
    WITH pop AS MATERIALIZED ({pop}),
    {labels},
    {rows}
    {lists},
    n AS (SELECT pop.case_id, {stats} FROM pop JOIN {"ev" if span else "q"} q USING (case_id) GROUP BY pop.case_id),
    a AS (SELECT case_id, {agg} FROM {b.hit_rows()} GROUP BY case_id){spans}
    SELECT n.case_id, {b.nrel(ctx.threshold)} = 0 AS _no_relevant, nret.case_id IS NOT NULL AS _in_run,
           {", ".join(exprs)}
    FROM n LEFT JOIN a USING (case_id) LEFT JOIN nret USING (case_id){joins} ORDER BY n.case_id
    """
    return sql, [*params, *qrels_params, *run_params]


#: run formats whose loader ranks each list in trec_eval's order (score descending, docno descending; MS MARCO's
#: score is 1/rank), so trec-compat can take the recorded rank instead of numbering every list again
RANKED_AS_TREC = frozenset({"trec", "msmarco", "json"})


def _run_facts(con: duckdb.DuckDBPyConnection, run_id: str, trec_compat: bool) -> tuple[bool, bool, bool]:
    """(has repeats, order the lists by score, staged without ranks): trec-compat orders by score unless the
    recorded rank already is trec_eval's order; a run staged without ranks (an evaluation without a store) is
    ordered by score in both modes, which is the rank its loader would have recorded."""
    source_format = run_value(con, run_id, "source_format")
    repeats = has_repeats(con, run_id)  # the one reading of the load's flag (unknown counts as repeats)
    if source_format is None:
        return repeats, trec_compat, False
    unranked = source_format == UNRANKED
    return repeats, unranked or (trec_compat and source_format not in RANKED_AS_TREC), unranked


#: measures that read no ranked list at all
_LABELS_ONLY = frozenset({"NumRel", "NumQ"})


def _depth(measures: Sequence[Measure]) -> int | None:
    """How deep the lists must be read: the deepest cutoff (1 when no measure reads a list), or None when some
    measure reads a whole list."""
    listed = [m for m in measures if m.name not in _LABELS_ONLY]
    if any(m.cutoff is None for m in listed):
        return None
    return max((m.cutoff for m in listed if m.cutoff is not None), default=1)


def evaluate(
    con: duckdb.DuckDBPyConnection,
    ctx: EvalContext,
    measures: Sequence[Measure],
    *,
    trec: bool,
    lists: pa.Table | str | None = None,
    labelled: str | None = None,
) -> pa.Table:
    """Per-case values of resolved ``measures``: case_id, ``_no_relevant``, ``_in_run``, then ``m{i}`` per measure,
    one row per case of the population, ordered by case_id. By default every labelled unit is read at its position
    in the whole list, in SQL (nothing of the run's rows is held in Python).

    ``lists``: the de-duplicated lists cut at the deepest cutoff (``ranking.cut_lists`` of the context), which a
    caller reading a shallow top of every list holds (the fixed table: a tenth of a 100-deep run); or the name
    of a relation of ``con`` holding them (``ranking.cut_lists_table``: the query then runs on ``con``).
    ``labelled``: a relation of ``con`` (a temp table is its own: the query runs on ``con``, not on a cursor of it)
    with (case_id, unit_id, pos) of at least every labelled unit of each list down to the deepest cutoff (the
    classifier keeps one). Both answer measures with a cutoff only; ``labelled`` none that reads the list length."""
    repeats, by_score, unranked = _run_facts(con, ctx.run_id, trec)
    cut = (
        labelled if labelled is not None else (lists if isinstance(lists, str) else None if lists is None else "_lists")
    )
    if cut is not None and (by_score or _depth(measures) is None):
        raise ValueError("cut lists answer measures with a cutoff, over lists ordered by recorded rank")
    if labelled is not None and any(m.name in {"Judged", "NumRet"} for m in measures):
        raise ValueError("labelled positions do not give the list length that Judged and NumRet read")
    if cut is None:
        sql, params = measures_sql(measures, ctx, trec=trec, repeats=repeats, by_score=by_score, unranked=unranked)
        return arrow(con, sql, params)
    sql, params = measures_sql(measures, ctx, trec=trec, repeats=repeats, by_score=False, cut=cut)
    if isinstance(lists, pa.Table) and labelled is None:
        return arrow(con, sql, params, _lists=lists)
    return con.sql(sql, params=params).to_arrow_table()
