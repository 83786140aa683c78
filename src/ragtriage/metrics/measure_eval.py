"""Per-case values of any list of parsed measures (``ragtriage.metrics.measures``) on one run, plus aggregates.

One DuckDB query does it all: the judged units of each list at their de-duplicated positions and the list lengths
(``ranking.judged_positions_sql``), the case's qrels counts, then one expression per measure. Definitions follow
trec_eval / ir_measures (docs/metrics.md "Measures by name"): relevant = grade >= rel (the dataset's threshold
when left out); a unit with a negative grade is judged but never relevant and, as trec_eval's "unjudged in pool",
is skipped by Bpref; DCG adds positive gains only.

Population rules (printed in every header):
- a case with no label at all is excluded from every measure and counted (trec_eval and ir_measures do the same);
- a case absent from the run scores 0 (trec_eval ``-c``);
- a case with labels but none relevant: default mode leaves it out of the measures divided by its relevant units
  (R, AP, nDCG, Rprec, Bpref: NULL, counted); trec-compat scores it as trec_eval does (0, nDCG from its gains).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.arrays import table_of
from ragtriage.contract.staging import qident, sql_str
from ragtriage.metrics.context import (
    EvalContext,
    arrow,
    gain_sql,
    over_arrow,
    population_header,
    resolve,
    unlabelled_count,
)
from ragtriage.metrics.measures import NEEDS_RELEVANT, Measure, parse_measures
from ragtriage.metrics.per_case import dcg_sql, ideal_dcg_sql
from ragtriage.metrics.ranking import has_repeats, judged_positions_sql
from ragtriage.store.load_memory import UNRANKED

_DCG_GAIN = {"log2": "linear", "exp-log2": "exponential"}


@dataclass
class MeasureResult:
    """Values of ``measures`` (resolved: every parameter filled) per case and aggregated, with the header that says
    how they were made. ``per_case`` is long (case_id, measure, value); ``wide`` has one column per measure.

    Every table here is built by DuckDB from ``wide`` (``over_arrow``, ``table_of``): pyarrow's own constructors
    from Python values import pandas when it is installed, which cost a one-off evaluation a quarter second."""

    measures: list[Measure]
    wide: pa.Table
    context: dict[str, Any]
    threshold: int
    mode: str
    notes: list[str] = field(default_factory=list)

    def _long(self, names: list[str], shown: list[int]) -> str:
        """SQL: (case_id, measure, value, integer, idx) for measure ``i`` of ``shown`` named ``names[i]``."""
        parts = [
            f"SELECT case_id, {sql_str(names[i])} AS measure, CAST({qident(str(m))} AS DOUBLE) AS value, "
            f"{m.summed} AS integer, {i} AS idx FROM wide"
            for i, m in ((i, self.measures[i]) for i in shown)
        ]
        return " UNION ALL ".join(parts)

    @property
    def per_case(self) -> pa.Table:
        names = [str(m) for m in self.measures]
        sql = (
            f"SELECT case_id, measure, value FROM ({self._long(names, list(range(len(names))))}) ORDER BY idx, case_id"
        )
        table = over_arrow(sql, wide=self.wide)
        return table.set_column(1, "measure", pc.dictionary_encode(table.column("measure")))

    @property
    def aggregate(self) -> pa.Table:
        """One row per measure: the mean over the cases it is defined for (a sum for NumQ/NumRet/NumRel/NumRelRet,
        as trec_eval and ir_measures aggregate them), n cases, and the parameters (left-out ones marked)."""
        return table_of(
            {
                "measure": np.array([str(m) for m in self.measures], dtype=object),
                "value": self._values(),
                "n": np.array([pc.count(self.wide.column(str(m))).as_py() for m in self.measures], dtype=np.int64),
                "aggregation": np.array(["sum" if m.summed else "mean" for m in self.measures], dtype=object),
                "parameters": np.array([m.parameters() for m in self.measures], dtype=object),
                "trec": np.array([m.trec_name(self.threshold) for m in self.measures], dtype=object),
            },
            AGGREGATE,
        )

    def _values(self) -> npt.NDArray[np.float64]:
        """Each measure's aggregate (NaN where no case has a value; ``table_of`` makes it null)."""
        values = [_agg(self.wide.column(str(m)), m.summed) for m in self.measures]
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

    @property
    def trec_wide(self) -> pa.Table:
        """``wide`` with each measure's column named as :meth:`name_of` names it (``P_10``, ``recip_rank``)."""
        return self.wide.rename_columns(["case_id", *(self.name_of(m) for m in self.measures)])

    def name_of(self, m: Measure) -> str:
        """trec_eval's name where trec_eval has the measure (``ndcg_cut_10``), else ir_measures' (``RR@10``)."""
        return m.trec_name(self.threshold) or str(m)

    def trec_rows(self, *, per_query: bool) -> pa.Table:
        """What trec_eval prints, in its order: with ``per_query`` (trec_eval -q) each query's measures (queries
        in byte order; num_q only in the ``all`` block), then the ``all`` rows (case_id NULL); names as
        :meth:`name_of` gives them; ``integer`` marks the counts."""
        names = [self.name_of(m) for m in self.measures]
        summary = table_of(
            {
                "case_id": np.array([None] * len(names), dtype=object),
                "measure": np.array(names, dtype=object),
                "value": self._values(),
                "integer": np.array([m.summed for m in self.measures], dtype=bool),
            },
            TREC_ROWS,
        )
        if not per_query:
            return summary
        shown = [i for i, m in enumerate(self.measures) if m.name != "NumQ"]
        sql = f"SELECT case_id, measure, value, integer FROM ({self._long(names, shown)}) ORDER BY case_id, idx"
        return pa.concat_tables([over_arrow(sql, wide=self.wide).cast(TREC_ROWS), summary])


AGGREGATE = pa.schema(
    [
        ("measure", pa.string()),
        ("value", pa.float64()),
        ("n", pa.int64()),
        ("aggregation", pa.string()),
        ("parameters", pa.string()),
        ("trec", pa.string()),
    ]
)
TREC_ROWS = pa.schema(
    [("case_id", pa.string()), ("measure", pa.string()), ("value", pa.float64()), ("integer", pa.bool_())]
)


def _agg(col: pa.ChunkedArray, summed: bool) -> float | None:
    v = (pc.sum if summed else pc.mean)(col).as_py()
    return None if v is None else float(v)


def _tag(r: int) -> str:
    return str(r).replace("-", "m")


class _Sql:
    """Collects the aggregate columns the measures need (each once) and writes each measure's expression."""

    def __init__(self, threshold: int, trec: bool) -> None:
        self.threshold, self.trec = threshold, trec
        self.nz = "0.0" if trec else "NULL"
        self.agg: dict[str, str] = {}
        self.stats: dict[str, str] = {}
        self.bpref: set[int] = set()

    def nrel(self, r: int) -> str:
        name = f"nrel_{_tag(r)}"
        self.stats[name] = f"count(q.unit_id) FILTER (WHERE q.grade >= {r})"
        return f"n.{name}"

    def hits(self, r: int, k: int | None) -> str:
        name = f"h_{_tag(r)}_{k or 'all'}"
        self.agg[name] = f"count(*) FILTER (WHERE grade >= {r}" + (f" AND pos <= {k})" if k else ")")
        return f"coalesce(a.{name}, 0)"

    def rel_pos(self, r: int) -> str:
        name = f"rp_{_tag(r)}"
        self.agg[name] = f"list(pos ORDER BY pos) FILTER (WHERE grade >= {r})"
        return f"a.{name}"

    def first(self, r: int) -> str:
        name = f"fr_{_tag(r)}"
        self.agg[name] = f"min(pos) FILTER (WHERE grade >= {r})"
        return f"a.{name}"

    def dcg(self, gain: str, k: int | None) -> tuple[str, str]:
        name, gains = f"dcg_{gain[:3]}_{k or 'all'}", f"gains_{gain[:3]}"
        self.agg[name] = dcg_sql(k, gain_sql(gain, "grade"))
        self.stats[gains] = f"list({gain_sql(gain, 'q.grade')} ORDER BY q.grade DESC) FILTER (WHERE q.grade > 0)"
        return f"a.{name}", ideal_dcg_sql(k, f"n.{gains}")

    def expr(self, m: Measure) -> str:
        k, r = m.cutoff, m.rel if m.rel is not None else self.threshold
        if m.name == "P":
            return f"{self.hits(r, k)} / {k}.0"
        if m.name == "Success":
            return f"CASE WHEN {self.hits(r, k)} > 0 THEN 1.0 ELSE 0.0 END"
        if m.name == "RR":
            fr = self.first(r)
            return f"coalesce(1.0 / {fr}, 0.0)" if k is None else f"CASE WHEN {fr} <= {k} THEN 1.0 / {fr} ELSE 0.0 END"
        if m.name == "Judged":
            name = f"j_{k or 'all'}"
            self.agg[name] = "count(*)" + (f" FILTER (WHERE pos <= {k})" if k else "")
            size = "nret.num_ret" if k is None else f"least({k}, nret.num_ret)"
            return f"CASE WHEN nret.num_ret > 0 THEN coalesce(a.{name}, 0) / {size} ELSE 0.0 END"
        if m.name == "NumRet":
            return "coalesce(nret.num_ret, 0)"
        if m.name == "NumRelRet":
            return self.hits(r, None)
        if m.name == "NumRel":
            return self.nrel(r)
        if m.name == "NumQ":
            return "1"
        return self._per_relevant(m, k, r)

    def _per_relevant(self, m: Measure, k: int | None, r: int) -> str:
        """Measures divided by the case's relevant units: NULL (default) or 0 (trec) for a case without any."""
        nrel = self.nrel(r)
        if m.name == "R":
            value = f"{self.hits(r, k)} / {nrel}"
        elif m.name == "AP":
            rp = self.rel_pos(r)
            cut = rp if k is None else f"list_filter({rp}, lambda p: p <= {k})"
            value = f"coalesce(list_sum(list_transform({cut}, lambda p, j: j / p)), 0.0) / {nrel}"
        elif m.name == "Rprec":
            value = f"coalesce(len(list_filter({self.rel_pos(r)}, lambda p: p <= {nrel})), 0) / {nrel}"
        elif m.name == "Bpref":
            self.bpref.add(r)
            name = f"bp_{_tag(r)}"
            self.nrel(r)
            self.stats[f"nnon_{_tag(r)}"] = f"count(q.unit_id) FILTER (WHERE q.grade >= 0 AND q.grade < {r})"
            self.agg[name] = (
                f"sum(CASE WHEN nb_{_tag(r)} > 0 THEN 1.0 - least(nb_{_tag(r)}, nrel_{_tag(r)}) / "
                f"least(nnon_{_tag(r)}, nrel_{_tag(r)}) ELSE 1.0 END) FILTER (WHERE grade >= {r})"
            )
            value = f"coalesce(a.{name}, 0.0) / {nrel}"
        else:  # nDCG: defined by its gains; the NULL rule of default mode uses the dataset threshold
            dcg, ideal = self.dcg(_DCG_GAIN[m.dcg or "exp-log2"], k)
            nrel = self.nrel(self.threshold)
            return (
                f"coalesce({dcg} / nullif({ideal}, 0), 0.0)"
                if self.trec
                else (f"CASE WHEN {nrel} > 0 THEN coalesce({dcg} / nullif({ideal}, 0), 0.0) END")
            )
        return f"CASE WHEN {nrel} > 0 THEN {value} ELSE {self.nz} END"

    def hit_rows(self) -> str:
        """The judged rows, with the non-relevant judged units before each row when Bpref needs them."""
        if not self.bpref:
            return "jp"
        cols = ", ".join(
            f"count(*) FILTER (WHERE grade >= 0 AND grade < {r}) OVER (PARTITION BY case_id ORDER BY pos "
            f"ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS nb_{_tag(r)}"
            for r in sorted(self.bpref)
        )
        stats = ", ".join(f"n.nrel_{_tag(r)}, n.nnon_{_tag(r)}" for r in sorted(self.bpref))
        return f"(SELECT jp.*, {cols}, {stats} FROM jp JOIN n USING (case_id))"


def measures_sql(
    measures: Sequence[Measure],
    ctx: EvalContext,
    *,
    trec: bool,
    repeats: bool,
    by_score: bool,
    unranked: bool = False,
) -> tuple[str, list[object]]:
    """The per-case query: one row per evaluated case, ``_no_relevant`` (none at the dataset threshold),
    ``_in_run`` and column ``m{i}`` = value of ``measures[i]`` (resolved). ``unranked``: a run of
    ``store.load_memory`` (every row scored and of a case, every case in the population unless a split is asked),
    which needs no population filter on its rows and no NULL-safe order."""
    b = _Sql(ctx.threshold, trec)
    exprs = [f"CAST({b.expr(m)} AS DOUBLE) AS m{i}" for i, m in enumerate(measures)]
    b.nrel(ctx.threshold)
    pop, params = ctx.population_sql(trec=trec)
    stats = ",\n".join(f"{v} AS {k}" for k, v in b.stats.items()) or "count(*) AS n_labels"
    agg = ",\n".join(f"{v} AS {k}" for k, v in b.agg.items()) or "count(*) AS n_judged"
    sql = f"""
    WITH pop AS MATERIALIZED ({pop}),
    q AS MATERIALIZED (SELECT case_id, unit_id, grade FROM qrels SEMI JOIN pop USING (case_id)),
    r AS NOT MATERIALIZED (SELECT case_id, unit_id, rank, score FROM results WHERE run_id = ? AND stage = ?
          {"" if unranked and ctx.split is None else "AND case_id IN (SELECT case_id FROM pop)"}),
    {judged_positions_sql(by_score=by_score, repeats=repeats, scored=unranked)},
    n AS (SELECT pop.case_id, {stats} FROM pop JOIN q USING (case_id) GROUP BY pop.case_id),
    a AS (SELECT case_id, {agg} FROM {b.hit_rows()} GROUP BY case_id)
    SELECT n.case_id, {b.nrel(ctx.threshold)} = 0 AS _no_relevant, nret.case_id IS NOT NULL AS _in_run,
           {", ".join(exprs)}
    FROM n LEFT JOIN a USING (case_id) LEFT JOIN nret USING (case_id) ORDER BY n.case_id
    """
    return sql, [*params, ctx.run_id, ctx.stage]


#: run formats whose loader ranks each list in trec_eval's order (score descending, docno descending; MS MARCO's
#: score is 1/rank), so trec-compat can take the recorded rank instead of numbering every list again
RANKED_AS_TREC = frozenset({"trec", "msmarco", "json"})


def _run_facts(con: duckdb.DuckDBPyConnection, run_id: str, trec_compat: bool) -> tuple[bool, bool, bool]:
    """(has repeats, order the lists by score, staged without ranks): trec-compat orders by score unless the
    recorded rank already is trec_eval's order; a run staged without ranks (an evaluation without a store) is
    ordered by score in both modes, which is the rank its loader would have recorded."""
    rows = con.execute("SELECT source_format FROM runs WHERE run_id = ?", [run_id]).fetchall()
    repeats = has_repeats(con, run_id)  # the one reading of the load's flag (unknown counts as repeats)
    if not rows:
        return repeats, trec_compat, False
    unranked = rows[0][0] == UNRANKED
    return repeats, unranked or (trec_compat and rows[0][0] not in RANKED_AS_TREC), unranked


def evaluate_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    measures: Sequence[str | Measure],
    *,
    stage: str = "final",
    split: str | None = None,
    gain: str = "exponential",
    trec_compat: bool = False,
) -> MeasureResult:
    """Values of ``measures`` (ir_measures names or parsed :class:`Measure`) per case and aggregated.

    A left-out ``rel`` takes the dataset's relevance threshold, a left-out nDCG ``dcg`` the ``gain``
    (``exponential`` = ``exp-log2``, ``linear`` = ``log2``). ``trec_compat`` does what trec_eval does: lists
    ordered by score descending then docno descending, linear gain, every case with a label evaluated
    (answerable or not) and a case without relevant labels scored 0 instead of left out.
    """
    gain = "linear" if trec_compat else gain
    parsed = parse_measures(measures)
    cut = sorted({m.cutoff for m in parsed if m.cutoff is not None}) or [1]
    ctx = resolve(con, run_id, cut, stage=stage, gain=gain, split=split)
    resolved = [m.resolve(ctx.threshold, gain) for m in parsed]
    repeats, by_score, unranked = _run_facts(con, run_id, trec_compat)
    sql, params = measures_sql(resolved, ctx, trec=trec_compat, repeats=repeats, by_score=by_score, unranked=unranked)
    table = arrow(con, sql, params)
    counts = {
        "cases": table.num_rows,
        "unlabelled": unlabelled_count(con, ctx, trec=trec_compat),
        "without_relevant": int(pc.sum(table.column("_no_relevant")).as_py() or 0),
        "absent": int(pc.sum(pc.invert(table.column("_in_run"))).as_py() or 0),
    }
    table = table.drop_columns(["_no_relevant", "_in_run"])
    table = table.rename_columns(["case_id", *(str(m) for m in resolved)])
    mode = "trec-compat" if trec_compat else "default"
    context = {
        "run": run_id,
        "stage": stage,
        "split": split,
        "unit": ctx.unit,
        "relevance threshold": f"grade >= {ctx.threshold} (dataset)",
        "gain": f"{gain} (--gain; nDCG without dcg=)",
        "mode": mode,
        **population_header(counts),
    }
    return MeasureResult(resolved, table, context, ctx.threshold, mode, population_notes(trec_compat))


def population_notes(trec_compat: bool) -> list[str]:
    """The population rules as printed under every figure (docs/metrics.md "Population")."""
    relevant = (
        "cases with labels but none relevant score 0 (trec_eval)"
        if trec_compat
        else f"cases with labels but none relevant are left out of {', '.join(sorted(NEEDS_RELEVANT))} (counted)"
    )
    return [
        "Population: cases without any label are excluded and counted; cases absent from the run score 0 "
        f"(trec_eval -c); {relevant}.",
    ]
