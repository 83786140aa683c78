"""trec_eval's measures beyond the core set (``all_trec``): each one defined here once, as a measure of the one
engine (``metrics.engine``), so it is also a ``--measure`` string (``iprec_at_recall_0.10``, ``infAP``,
``Rndcg``, ``relative_P_5``) and prints as trec_eval prints it (``ragtriage trec-eval``).

A family is a name, its parameters (trec_eval's defaults when left out), how its per-query values aggregate (mean, sum,
geometric mean with trec_eval's floor of 0.00001, or none) and one SQL expression per query written over what the
engine's query already holds: the labelled units of each list at their positions (``jp``: pos, grade), the list length
(``nret.num_ret``) and the case's qrels counts (``n``). The definitions follow trec_eval 10.0's ``m_*.c``
(docs/trec_eval.md gives each one as a formula). Grades below zero are "in the pool but unjudged" (trec_eval's -2); a
listed unit without a label is "not in the pool" (-1). Gains are the grades (trec_eval's default gains, or the gains its
``rel_level=gain`` parameters give: ``G``, ``ndcg_rel``, ``Rndcg``, ``dcg``, ``ideal_dcg`` and ``ndcg`` with gains take
them as flat (level, gain, ...) parameters); a query absent from the run (trec_eval ``-c``) scores 0 on every family, as
trec_eval's stand-in ranking does once its clean-up has run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ragtriage.contract.relevance import is_judged, is_judged_nonrelevant, is_relevant
from ragtriage.metrics.gain import Levels, discount_sql, gain_sql, ideal_dcg_sql, ideal_gains_sql

MIN_GEO_MEAN = 0.00001
"""trec_eval's floor under a per-query value before its logarithm (gm_map, gm_bpref)."""
INFAP_EPSILON = 0.00001

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


class Measure(Protocol):
    """What a family's SQL reads of its measure (``measures.Measure``): this module sits below the parser."""

    @property
    def rel(self) -> int | None: ...
    @property
    def params(self) -> tuple[float, ...]: ...


class Builder(Protocol):
    """What a family's SQL may ask of the engine's query builder (``engine.Builder``)."""

    threshold: int
    windows: dict[str, str]

    def stat(self, name: str, sql: str) -> str: ...
    def aggregate(self, name: str, sql: str) -> str: ...
    def window(self, name: str, sql: str) -> str: ...
    def nrel(self, r: int) -> str: ...
    def hits(self, r: int, k: int | None) -> str: ...
    def rel_pos(self, r: int) -> str: ...
    def named(self, name: str, rel: int | None) -> str: ...


@dataclass(frozen=True)
class Family:
    """One trec_eval measure: ``params`` its defaults (``cut`` families: one measure per value, named
    ``name_value``), ``agg`` how the queries' values combine, ``text`` a per-query string (relstring)."""

    name: str
    sql: Callable[[Builder, Measure], str]
    params: tuple[float, ...] = ()
    cut: str | None = None  # "long" (P_5) or "double" (iprec_at_recall_0.10): one measure per parameter
    agg: str = "mean"  # mean | sum | gm | none
    per_query: bool = True
    summary: bool = True
    text: bool = False
    bare: bool = True  # whether the bare name means this family (``ndcg`` alone is the engine's nDCG)


def _f(x: float) -> str:
    """A parameter as a DOUBLE literal: DuckDB reads ``0.7`` as a DECIMAL, whose exact product rounds unlike C's
    double (round(0.7 x 15) is 11 in DECIMAL, 10 in double, as trec_eval computes it)."""
    return f"CAST({float(x)!r} AS DOUBLE)"


def _r(b: Builder, m: Measure) -> int:
    return m.rel if m.rel is not None else b.threshold


def _num_ret() -> str:
    return "coalesce(nret.num_ret, 0)"


def _tag(x: float) -> str:
    return f"{x:g}".replace(".", "_").replace("-", "m")


def _levels(m: Measure) -> Levels:
    """A gain family's (level, gain) pairs from its flat parameters (none: the grades are the gains)."""
    p = m.params
    return tuple((int(p[i]), p[i + 1]) for i in range(0, len(p) - 1, 2))


def _key(levels: Levels) -> str:
    return "_".join(f"{lvl}x{_tag(g)}" for lvl, g in levels)


def _gain(m: Measure, grade: str = "grade") -> str:
    return gain_sql("linear", grade, _levels(m))


def _ideal(b: Builder, m: Measure) -> str:
    """The case's positive gains, highest first: trec_eval's ideal ranking under the measure's gains."""
    return b.stat(f"ig{_key(_levels(m))}", ideal_gains_sql("linear", "q.grade", _levels(m)))


def _ideal_dcg(ig: str, k: str) -> str:
    return f"coalesce({ideal_dcg_sql(k, ig)}, 0.0)"


# ---- the families -------------------------------------------------------------------------------------------


def _gm_map(b: Builder, m: Measure) -> str:
    return b.named("AP", m.rel)


def _gm_bpref(b: Builder, m: Measure) -> str:
    return b.named("Bpref", m.rel)


def _iprec(b: Builder, r: int, level: float) -> str:
    """Interpolated precision at a recall level: the best precision at or after the relevant unit that reaches
    round(level x relevant) relevant units (trec_eval's lround); 0 when the run never reaches it."""
    nrel, rp, nrr = b.nrel(r), b.rel_pos(r), b.hits(r, None)
    c = f"round({_f(level)} * {nrel})"
    best = f"list_max(list_transform({rp}, lambda p, j: CASE WHEN j >= {c} THEN j / p ELSE 0.0 END))"
    return f"CASE WHEN {c} > {nrr} THEN 0.0 ELSE coalesce({best}, 0.0) END"


def _iprec_at_recall(b: Builder, m: Measure) -> str:
    return _iprec(b, _r(b, m), m.params[0])


def _11pt_avg(b: Builder, m: Measure) -> str:
    # summed from the highest level down, as trec_eval adds them (the order decides the last bit)
    parts = " + ".join(f"({_iprec(b, _r(b, m), x)})" for x in sorted(m.params, reverse=True))
    return f"({parts}) / {len(m.params)}.0"


def _rprec_mult(b: Builder, m: Measure) -> str:
    """Precision at floor(mult x relevant + 0.9) units (trec_eval's rounding), 0 when that is 0."""
    r = _r(b, m)
    c = f"floor({_f(m.params[0])} * {b.nrel(r)} + {_f(0.9)})"
    hits = f"coalesce(len(list_filter({b.rel_pos(r)}, lambda p: p <= {c})), 0)"
    return f"CASE WHEN {c} < 1 THEN 0.0 ELSE {hits} / {c} END"


def _relative_p(b: Builder, m: Measure) -> str:
    r, k = _r(b, m), int(m.params[0])
    nrel = b.nrel(r)
    return f"CASE WHEN {nrel} > 0 THEN {b.hits(r, k)} / least({k}, {nrel}) ELSE 0.0 END"


def _unj(b: Builder, m: Measure) -> str:
    """Share of the top k that is not judged (not in the qrels, or with a negative grade); the list is padded
    with judged units up to k."""
    k = int(m.params[0])
    judged = b.aggregate(f"jz_{k}", f"count(*) FILTER (WHERE {is_judged()} AND pos <= {k})")
    return f"(least({k}, {_num_ret()}) - coalesce({judged}, 0)) / {k}.0"


def _set(kind: str) -> Callable[[Builder, Measure], str]:
    def sql(b: Builder, m: Measure) -> str:
        r = _r(b, m)
        nrr, nrel, ret = b.hits(r, None), b.nrel(r), _num_ret()
        if kind == "P":
            return f"CASE WHEN {ret} > 0 THEN {nrr} / {ret} ELSE 0.0 END"
        if kind == "recall":
            return f"CASE WHEN {nrel} > 0 THEN {nrr} / {nrel} ELSE 0.0 END"
        if kind == "relative_P":
            return f"CASE WHEN {ret} > 0 AND {nrel} > 0 THEN {nrr} / least({ret}, {nrel}) ELSE 0.0 END"
        if kind == "map":
            return f"CASE WHEN {ret} > 0 AND {nrel} > 0 THEN ({nrr} * {nrr}) / ({ret} * {nrel}) ELSE 0.0 END"
        x = m.params[0]  # F: (x + 1) P R / (x P + R)
        p, rec = f"({nrr} / {ret})", f"({nrr} / {nrel})"
        return f"CASE WHEN {nrr} > 0 THEN ({_f(x)} + 1.0) * {p} * {rec} / ({_f(x)} * {p} + {rec}) ELSE 0.0 END"

    return sql


def _utility(b: Builder, m: Measure) -> str:
    """p1·a + p2·b + p3·c + p4·d over the contingency table; ``params[4]`` is -N (documents in the collection)."""
    r = _r(b, m)
    p1, p2, p3, p4 = m.params[:4]
    n_docs = m.params[4] if len(m.params) > 4 else 0.0
    nrr, nrel, ret = b.hits(r, None), b.nrel(r), _num_ret()
    value = (
        f"{_f(p1)} * {nrr} + {_f(p2)} * ({ret} - {nrr}) + {_f(p3)} * ({nrel} - {nrr}) "
        f"+ {_f(p4)} * ({_f(n_docs)} + {nrr} - {ret} - {nrel})"
    )
    return f"CASE WHEN nret.num_ret IS NULL THEN 0.0 ELSE {value} END"


def _num_nonrel_judged_ret(b: Builder, m: Measure) -> str:
    r = _r(b, m)
    n = b.aggregate(f"nj_{_tag(r)}", f"count(*) FILTER (WHERE {is_judged_nonrelevant('grade', r)})")
    return f"coalesce({n}, 0.0)"


def _infap(b: Builder, m: Measure) -> str:
    """Yilmaz and Aslam's infAP as trec_eval computes it: at each relevant unit, 1/rank plus the precision
    above it estimated from the judged units there (units in the pool but unjudged count as judged-above)."""
    r = _r(b, m)
    tag = _tag(r)
    rb = b.window(f"w_rel_{tag}", f"count(*) FILTER (WHERE {is_relevant('grade', r)})")
    nb = b.window(f"w_non_{tag}", f"count(*) FILTER (WHERE {is_judged_nonrelevant('grade', r)})")
    ub = b.window("w_unj", f"count(*) FILTER (WHERE NOT {is_judged()})")
    e = INFAP_EPSILON
    term = (
        f"CASE WHEN pos = 1 THEN 1.0 ELSE 1.0 / pos + ((pos - 1.0) / pos) * "
        f"(({rb} + {nb} + {ub}) / (pos - 1.0)) * (({rb} + {_f(e)}) / ({rb} + {nb} + {_f(2 * e)})) END"
    )
    total = b.aggregate(f"infap_{tag}", f"sum({term}) FILTER (WHERE {is_relevant('grade', r)})")
    nrel = b.nrel(r)
    return f"CASE WHEN {nrel} > 0 THEN coalesce({total}, 0.0) / {nrel} ELSE 0.0 END"


def _bin_g(b: Builder, m: Measure) -> str:
    """Mean over relevant units of 1 / log2(2 + non-relevant units listed above it)."""
    r = _r(b, m)
    s = f"list_sum(list_transform({b.rel_pos(r)}, lambda p, j: 1.0 / log2(2 + p - j)))"
    nrel = b.nrel(r)
    return f"CASE WHEN {nrel} > 0 THEN coalesce({s}, 0.0) / {nrel} ELSE 0.0 END"


def _cum_dcg(b: Builder, m: Measure) -> str:
    return b.window(f"w_cdcg{_key(_levels(m))}", f"sum({_gain(m)} / {discount_sql('pos')}) AND CURRENT")


def _row_ideal(b: Builder, m: Measure) -> str:
    """The case's ideal gains as a column of the labelled rows (a row's measure reads its prefix)."""
    name = _ideal(b, m).removeprefix("n.")
    b.windows[f"r_{name}"] = f"n.{name}"
    return f"r_{name}"


def _dcg(b: Builder, m: Measure) -> str:
    """The list's DCG under the measure's gains (every unit with a gain other than 0, negative ones too)."""
    g = _gain(m)
    total = b.aggregate(f"dcg{_key(_levels(m))}", f"sum({g} / {discount_sql('pos')}) FILTER (WHERE {g} != 0)")
    return f"coalesce({total}, 0.0)"


def _ideal_dcg_all(b: Builder, m: Measure) -> str:
    ideal = _ideal(b, m)
    return _ideal_dcg(ideal, f"coalesce(len({ideal}), 0)")


def _ndcg(b: Builder, m: Measure) -> str:
    """trec_eval's ndcg with gain parameters: the list's DCG over the ideal ranking's (0 without a positive gain)."""
    ideal = _ideal_dcg_all(b, m)
    return f"CASE WHEN {ideal} > 0 THEN {_dcg(b, m)} / {ideal} ELSE 0.0 END"


def _g(b: Builder, m: Measure) -> str:
    """trec_eval's G: each gain discounted by log2(2 + the ideal cost so far - the gain so far), where the ideal
    cost adds the ideal ranking's gain at each position (at least 1); normalised by the ideal's total gain."""
    ig, g, key = _row_ideal(b, m), _gain(m), _key(_levels(m))
    cg = b.window(f"w_cgain{key}", f"sum({g}) AND CURRENT")
    prefix = f"list_transform({ig}[1:least(pos, len({ig}))], lambda x: greatest(x, 1.0))"
    cost = f"(coalesce(list_sum({prefix}), 0.0) + greatest(0, pos - coalesce(len({ig}), 0)))"
    total = b.aggregate(f"g_sum{key}", f"sum({g} / log2(2 + {cost} - {cg})) FILTER (WHERE {g} != 0)")
    ideal = f"coalesce(list_sum({_ideal(b, m)}), 0.0)"
    return f"CASE WHEN {ideal} > 0 THEN coalesce({total}, 0.0) / {ideal} ELSE 0.0 END"


def _ndcg_rel(b: Builder, m: Measure) -> str:
    """nDCG averaged over the units with a positive gain: at each one listed, the nDCG at its position; each one
    not listed takes the nDCG of the whole list."""
    ig, g, key = _row_ideal(b, m), _gain(m), _key(_levels(m))
    cdcg = _cum_dcg(b, m)
    at_rel = b.aggregate(
        f"ndr_sum{key}", f"sum({cdcg} / {_ideal_dcg(ig, f'least(pos, len({ig}))')}) FILTER (WHERE {g} > 0)"
    )
    listed = b.aggregate(f"ndr_n{key}", f"count(*) FILTER (WHERE {g} > 0)")
    dcg_all = _dcg(b, m)
    ideal = _ideal(b, m)
    n_pos = f"coalesce(len({ideal}), 0)"
    rest = f"({n_pos} - coalesce({listed}, 0)) * {dcg_all} / {_ideal_dcg(ideal, n_pos)}"
    s = f"(coalesce({at_rel}, 0.0) + {rest})"
    return f"CASE WHEN {n_pos} > 0 AND {s} > 0 THEN {s} / {n_pos} ELSE 0.0 END"


def _rndcg(b: Builder, m: Measure) -> str:
    """nDCG averaged at the R levels: the positions where the ideal ranking's gain drops (the count of units at
    each positive grade and above), plus the end of the list when it reaches beyond the position after the last
    positive unit (trec_eval evaluates that position with the drop to gain 0, and the list's end only after it)."""
    ideal, g = _ideal(b, m), _gain(m)
    listed = b.aggregate(
        f"rn_dcg{_key(_levels(m))}",
        f"list(struct_pack(p := pos, d := {g} / {discount_sql('pos')}) ORDER BY pos) FILTER (WHERE {g} != 0)",
    )
    ret, n_pos = _num_ret(), f"coalesce(len({ideal}), 0)"

    def dcg(k: str) -> str:
        return f"coalesce(list_sum(list_transform(list_filter({listed}, lambda x: x.p <= {k}), lambda x: x.d)), 0.0)"

    levels = (
        f"list_transform(list_reverse_sort(list_distinct({ideal})), "
        f"lambda g: len(list_filter({ideal}, lambda y: y >= g)))"
    )
    at_levels = f"list_sum(list_transform({levels}, lambda c: {dcg(f'least(c, {ret})')} / {_ideal_dcg(ideal, 'c')}))"
    tail = f"CASE WHEN {ret} > {n_pos} + 1 THEN {dcg(ret)} / {_ideal_dcg(ideal, n_pos)} ELSE 0.0 END"
    count = f"(len({levels}) + CASE WHEN {ret} > {n_pos} + 1 THEN 1 ELSE 0 END)"
    nrel = b.nrel(b.threshold)
    return f"CASE WHEN {nrel} = 0 OR {n_pos} = 0 THEN 0.0 ELSE (coalesce({at_levels}, 0.0) + {tail}) / {count} END"


def _gain_scale(b: Builder) -> str:
    """trec_eval's rbp keeps gains in [0, 1]: grades above 1 are divided by the case's highest grade."""
    top = b.stat("top_grade", f"max(q.grade) FILTER (WHERE {is_judged('q.grade')})")
    return f"CASE WHEN coalesce({top}, 0) > 1 THEN {top} ELSE 1 END"


def _rbp(b: Builder, m: Measure) -> str:
    p = m.params[0]
    s = b.aggregate(f"rbp_{_tag(p)}", f"sum(grade * pow({_f(p)}, pos - 1)) FILTER (WHERE grade > 0)")
    return f"(1.0 - {_f(p)}) * coalesce({s}, 0.0) / {_gain_scale(b)}"


def _rbp_resid(b: Builder, m: Measure) -> str:
    """RBP's residual: the weight of the unjudged units (not in the qrels, or a negative grade) plus the tail
    past the list's end."""
    p = m.params[0]
    judged = b.aggregate(f"rbpj_{_tag(p)}", f"sum(pow({_f(p)}, pos - 1)) FILTER (WHERE {is_judged()})")
    n_judged = b.aggregate("rbpj_n", f"count(*) FILTER (WHERE {is_judged()})")
    ret = _num_ret()
    unjudged = f"((1.0 - pow({_f(p)}, {ret})) / (1.0 - {_f(p)}) - coalesce({judged}, 0.0))"
    value = f"pow({_f(p)}, {ret}) + (1.0 - {_f(p)}) * {unjudged}"
    return f"CASE WHEN {ret} > coalesce({n_judged}, 0) THEN {value} ELSE 0.0 END"


def _relstring(b: Builder, m: Measure) -> str:
    """The top ``params[0]`` units as one character each: the grade 0-9, '>' above 9, '.' for a negative grade
    (in the pool, unjudged), '-' for a unit without a label."""
    k = int(m.params[0])
    char = f"CASE WHEN grade > 9 THEN '>' WHEN {is_judged()} THEN CAST(grade AS VARCHAR) ELSE '.' END"
    top = b.aggregate(f"rs_{k}", f"list(struct_pack(p := pos, c := {char})) FILTER (WHERE pos <= {k})")
    at = f"coalesce(list_filter(coalesce({top}, []), lambda x: x.p = i)[1].c, '-')"
    return f"array_to_string(list_transform(range(1, least({k}, {_num_ret()}) + 1), lambda i: {at}), '')"


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("gm_map", _gm_map, agg="gm", per_query=False),
        Family("iprec_at_recall", _iprec_at_recall, RECALL_LEVELS, cut="double"),
        Family("relstring", _relstring, (10.0,), agg="none", summary=False, text=True),
        Family("infAP", _infap),
        Family("gm_bpref", _gm_bpref, agg="gm", per_query=False),
        Family("Rprec_mult", _rprec_mult, RPREC_MULTS, cut="double"),
        Family("utility", _utility, (1.0, -1.0, 0.0, 0.0)),
        Family("11pt_avg", _11pt_avg, RECALL_LEVELS),
        Family("binG", _bin_g),
        Family("G", _g),
        Family("ndcg_rel", _ndcg_rel),
        Family("Rndcg", _rndcg),
        Family("dcg", _dcg),
        Family("ideal_dcg", _ideal_dcg_all),
        Family("ndcg", _ndcg, bare=False),
        Family("relative_P", _relative_p, tuple(float(k) for k in CUTOFFS), cut="long"),
        Family("set_P", _set("P")),
        Family("set_relative_P", _set("relative_P")),
        Family("set_recall", _set("recall")),
        Family("set_map", _set("map")),
        Family("set_F", _set("F"), (1.0,)),
        Family("num_nonrel_judged_ret", _num_nonrel_judged_ret, agg="sum"),
        Family("rbp", _rbp, (0.9,)),
        Family("rbp_resid", _rbp_resid, (0.9,)),
        Family("unj", _unj, (5.0, 10.0, 20.0), cut="long"),
    )
}


def is_text(name: str) -> bool:
    """Whether a measure's per-case value is text (relstring): no number, no aggregate."""
    return name in FAMILIES and FAMILIES[name].text


def cut_name(family: Family, value: float) -> str:
    """trec_eval's name of one measure of a cut family: ``relative_P_5``, ``iprec_at_recall_0.10``."""
    return f"{family.name}_{int(value)}" if family.cut == "long" else f"{family.name}_{value:3.2f}"


def parse(text: str) -> tuple[str, tuple[float, ...]] | None:
    """A family measure's name as trec_eval prints it, or with its parameters in brackets: ``unj_5``,
    ``iprec_at_recall_0.10``, ``set_F``, ``rbp(0.95)``, ``utility(1,-1,0,0)`` -> (family, parameters)."""
    name, _, rest = text.partition("(")
    if rest:
        if not rest.endswith(")") or name not in FAMILIES:
            return None
        try:
            values = tuple(float(x) for x in rest[:-1].split(",") if x.strip())
        except ValueError:
            return None
        return name, values
    if text in FAMILIES and FAMILIES[text].cut is None and FAMILIES[text].bare:
        return text, FAMILIES[text].params
    for fam in FAMILIES.values():
        if fam.cut and text.startswith(fam.name + "_"):
            try:
                return fam.name, (float(text[len(fam.name) + 1 :]),)
            except ValueError:
                return None
    return None
