"""Per-case values of any list of parsed measures (``ragtriage.metrics.measures``) on one run, plus aggregates:
``--measure`` strings and trec-compat ask the one engine (``metrics.engine``) and shape its answer here, under the
header of the population rule (``EvalContext.population_sql``) that every figure prints (:func:`population_notes`).
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

from ragtriage.arrays import non_null_values, table_of
from ragtriage.contract.relevance import relevance_statement
from ragtriage.contract.staging import qident, sql_str
from ragtriage.metrics.context import EvalContext, over_arrow, population_header, resolve, unlabelled_count
from ragtriage.metrics.engine import evaluate
from ragtriage.metrics.gain import DEFAULT_GAIN
from ragtriage.metrics.measures import Measure, parse_measures
from ragtriage.metrics.trec_families import FAMILIES, MIN_GEO_MEAN, is_text


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
    #: where a left-out ``rel`` came from: the dataset or ``--threshold`` (said in ``parameters``)
    threshold_source: str = "dataset"

    def _long(self, names: list[str], shown: list[int]) -> str:
        """SQL: (case_id, measure, value, integer, idx) for measure ``i`` of ``shown`` named ``names[i]``."""
        parts = [
            f"SELECT case_id, {sql_str(names[i])} AS measure, "
            f"{'NULL' if is_text(m.name) else f'CAST({qident(str(m))} AS DOUBLE)'} AS value, "
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
                "aggregation": np.array([_how(m) for m in self.measures], dtype=object),
                "parameters": np.array([m.parameters(self.threshold_source) for m in self.measures], dtype=object),
                "trec": np.array([m.trec_name(self.threshold) for m in self.measures], dtype=object),
            },
            AGGREGATE,
        )

    def _values(self) -> npt.NDArray[np.float64]:
        """Each measure's aggregate (NaN where no case has a value; ``table_of`` makes it null)."""
        values = self.aggregates_of(self.wide)
        return np.array([np.nan if values[str(m)] is None else values[str(m)] for m in self.measures], np.float64)

    def aggregates_of(self, wide: pa.Table) -> dict[str, float | None]:
        """Each measure's aggregate (``_agg``) over ``wide``, a table shaped as :attr:`wide` (``case_id`` and a
        column per measure, possibly only some of them): so per-case values remade elsewhere (trec_eval's ``-J``
        lists, ``-Z`` scores) aggregate by the same rule, in the same case order."""
        ordered = wide.take(pc.sort_indices(wide, [("case_id", "ascending")]))
        names = set(ordered.column_names)
        return {str(m): _agg(ordered.column(str(m)), m) for m in self.measures if str(m) in names}

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


def _how(m: Measure) -> str:
    """How a measure's per-case values aggregate: sum, mean, gm (trec_eval's geometric mean) or none."""
    return FAMILIES[m.name].agg if m.name in FAMILIES else ("sum" if m.summed else "mean")


def _agg(col: pa.ChunkedArray, m: Measure) -> float | None:
    """The aggregate of one measure's column (rows in case-id byte order): a sum, a mean, or (gm_map, gm_bpref)
    trec_eval's geometric mean of the values floored at MIN_GEO_MEAN; None for a measure trec_eval prints per query
    only (relstring). The sum runs left to right over the cases in that order, as trec_eval's accumulator adds its
    queries (sorted by strcmp), so a mean on a rounding boundary of ``%6.4f`` prints trec_eval's digit: a
    pairwise sum (Arrow's, numpy's ``sum``) can land one ulp away."""
    how = _how(m)
    if how == "none":
        return None
    if how == "gm":
        col = pc.ln(pc.max_element_wise(col, pa.scalar(MIN_GEO_MEAN)))
    values = non_null_values(col, np.float64)
    if values.size == 0:
        return None
    total = float(np.add.accumulate(values)[-1])
    if how == "sum":
        return total
    mean = total / values.size
    return float(np.exp(mean)) if how == "gm" else mean


def evaluate_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    measures: Sequence[str | Measure],
    *,
    stage: str = "final",
    split: str | None = None,
    gain: str = DEFAULT_GAIN,
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
    table = evaluate(con, ctx, resolved, trec=trec_compat)
    counts = population_of(table, unlabelled_count(con, ctx, trec=trec_compat))
    return measure_result(ctx, resolved, table, counts, trec_compat=trec_compat, gain=gain)


def measure_result(
    ctx: EvalContext,
    resolved: list[Measure],
    table: pa.Table,
    counts: dict[str, int],
    *,
    trec_compat: bool,
    gain: str,
) -> MeasureResult:
    """The engine's per-case table (``engine.evaluate``'s columns, from any engine) shaped as a
    :class:`MeasureResult` under the header of its context and population ``counts``."""
    stage, split, run_id = ctx.stage, ctx.split, ctx.run_id
    table = table.drop_columns(["_no_relevant", "_in_run"])
    table = table.rename_columns(["case_id", *(str(m) for m in resolved)])
    mode = "trec-compat" if trec_compat else "default"
    context = {
        "run": run_id,
        "stage": stage,
        "split": split,
        "unit": ctx.unit,
        "relevance threshold": relevance_statement(ctx.threshold, ctx.threshold_source),
        "gain": f"{gain} (--gain; nDCG without dcg=)",
        "mode": mode,
        **population_header(counts, ctx.population),
    }
    notes = population_notes(ctx.population)
    return MeasureResult(resolved, table, context, ctx.threshold, mode, notes, ctx.threshold_source)


def population_of(table: pa.Table, unlabelled: int) -> dict[str, int]:
    """The header's population figures from the engine's own per-case rows (``evaluate``): evaluated cases, cases
    excluded for having no label (``unlabelled``, counted apart), evaluated cases with no relevant label,
    evaluated cases absent from the run."""
    return {
        "cases": table.num_rows,
        "unlabelled": unlabelled,
        "without_relevant": int(pc.sum(table.column("_no_relevant")).as_py() or 0),
        "absent": int(pc.sum(pc.invert(table.column("_in_run"))).as_py() or 0),
    }


def population_counts(con: duckdb.DuckDBPyConnection, ctx: EvalContext, *, trec: bool = False) -> dict[str, int]:
    """:func:`population_of` a context, for a command that prints the header beside other figures: the engine
    asked for the relevant labels alone (it reads the top of each list only, to see which cases the run has)."""
    table = evaluate(con, ctx, [Measure("NumRel").resolve(ctx.threshold, ctx.gain)], trec=trec)
    return population_of(table, unlabelled_count(con, ctx, trec=trec))


def population_notes(population: str = "all") -> list[str]:
    """The population rule as printed under every figure (docs/metrics.md "Population")."""
    relevant = {
        "all": "cases with labels but none relevant score 0, as in trec_eval (--cases with-relevant leaves them out)",
        "with-relevant": "only cases with a relevant label count (--cases with-relevant)",
        "in-run": "only cases the run has a list for count (--cases in-run)",
    }[population]
    absent = "" if population == "in-run" else "; cases absent from the run score 0 (trec_eval -c)"
    return [f"Population: cases without any label are excluded and counted{absent}; {relevant}."]
