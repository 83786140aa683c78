"""``ragtriage.evaluate``: a one-off evaluation for a notebook or a script, the way pytrec_eval or ir_measures is
called, without a store file.

The qrels and the run (paths in any format ``ragtriage load`` reads, compressed or not; dict-of-dicts; pyarrow
tables; pandas or polars DataFrames) are read into an in-memory DuckDB (clean TREC files by the load's readers
into views, ``store.load_memory``; anything else by the one loader, ``store.byo.load_inputs``), and the measures
are computed by the one computation (``metrics.measure_eval``) in the mode every command uses by default, whose
figures are trec_eval's (linear gain for ``nDCG@k``, cases without relevant labels scored 0), so a measure named as
in ir_measures gives ir_measures' value and ``ragtriage metrics`` prints the same number.

>>> import ragtriage
>>> qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
>>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d9": 0.1}, "q2": {"d4": 0.5, "d3": 0.4}}
>>> result = ragtriage.evaluate(qrels, run, measures=["nDCG@10", "P@1", "RR", "AP"])
>>> result.aggregate.select(["measure", "value"]).to_pylist()  # doctest: +NORMALIZE_WHITESPACE
[{'measure': 'nDCG@10', 'value': 0.8154648767857288}, {'measure': 'P@1', 'value': 0.5},
 {'measure': 'RR', 'value': 0.75}, {'measure': 'AP', 'value': 0.75}]
>>> result.wide.select(["case_id", "RR"]).to_pylist()  # one row per query; per_query is the long form
[{'case_id': 'q1', 'RR': 1.0}, {'case_id': 'q2', 'RR': 0.5}]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.relevance import relevance_statement
from ragtriage.metrics import MetricReport
from ragtriage.metrics.context import EvalContext, using
from ragtriage.metrics.gain import DEFAULT_GAIN
from ragtriage.metrics.measure_eval import MeasureResult, evaluate_run
from ragtriage.metrics.measures import Measure
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource, load_inputs
from ragtriage.store.load_memory import light_store
from ragtriage.store.memory_cap import cap_in_memory

DEFAULT_MEASURES = ("P@10", "R@100", "nDCG@10", "RR", "AP")


@dataclass
class Evaluation:
    """``aggregate``: one row per measure (measure, value, n, aggregation, parameters, trec); ``per_query``: long
    (case_id, measure, value); ``wide``: one row per query, one column per measure. pyarrow tables: call
    ``.to_pandas()`` on them when pandas is installed. ``context`` and ``notes`` say how the figures were made."""

    aggregate: pa.Table
    per_query: pa.Table
    wide: pa.Table
    context: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, res: MeasureResult, load_notes: list[str]) -> Evaluation:
        return cls(res.aggregate, res.per_case, res.wide, res.context, [*res.notes, *load_notes])


def memory_store(
    qrels: Any,
    run: Any,
    *,
    threshold: int | None = None,
    grade_map: str | dict[int, int] | None = None,
    measures_only: bool = True,
) -> tuple[duckdb.DuckDBPyConnection, str, list[str]]:
    """An in-memory store holding ``qrels`` and ``run``: (connection, run id, the load's notes for the report).
    For ``measures_only`` (what ``evaluate_run`` reads), clean TREC files are read into views of the store's
    names (``store.load_memory``); anything else, and every other report (slices, judged, stages), is loaded the
    full way, as ``ragtriage load`` would load it."""
    light = light_store(qrels, run, threshold=threshold, grade_map=grade_map) if measures_only else None
    if light is not None:
        return light
    con = connect(":memory:")
    source = RunSource(run, run_id="run") if not isinstance(run, RunSource) else run
    try:
        cap_in_memory(con)
        summary = load_inputs(con, LoadRequest(qrels=qrels, runs=[source], threshold=threshold, grade_map=grade_map))
    except BaseException:
        con.close()
        raise
    report = summary.runs[0]
    return con, report.target, report.notes()


def evaluate(
    qrels: Any,
    run: Any,
    measures: Sequence[str | Measure] = DEFAULT_MEASURES,
    *,
    threshold: int | None = None,
    grade_map: str | dict[int, int] | None = None,
    trec_compat: bool = False,
    gain: str = DEFAULT_GAIN,
    cases: str = "all",
) -> Evaluation:
    """Evaluate ``run`` against ``qrels`` with ``measures`` named in ir_measures' syntax (``nDCG@10``,
    ``P(rel=2)@5``, ``AP``, ``Rprec``, ``Bpref``, ``Judged@10``, ``NumRet``; trec_eval names such as
    ``ndcg_cut_10`` and ``map`` too).

    ``qrels``/``run``: a path (TREC, BEIR, MS MARCO, JSON, the contract's files; .gz/.bz2), a dict-of-dicts, a
    pyarrow Table or a pandas/polars DataFrame. ``threshold``: grade >= threshold is relevant where a measure
    leaves ``rel`` out (default 1, as trec_eval's ``-l``); ``grade_map`` ("4:3,3:2") maps grades first.
    ``gain``: nDCG without ``dcg=`` (``exponential`` is named ``nDCG(dcg='exp-log2')@k``); ``cases``: the
    population, as ``--cases`` (``all``, ``with-relevant``, ``in-run``); ``trec_compat=True``: what
    ``metrics --trec-compat`` computes (score order, every labelled case answerable or not).
    """
    con, run_id, load_notes = memory_store(
        Path(qrels) if isinstance(qrels, str) else qrels,
        Path(run) if isinstance(run, str) else run,
        threshold=threshold,
        grade_map=grade_map,
    )
    try:
        with using(cases=cases):  # the threshold is the in-memory dataset's own (loaded with it)
            res = evaluate_run(con, run_id, measures, gain=gain, trec_compat=trec_compat)
        return Evaluation.of(res, load_notes)
    finally:
        con.close()


NOTES = [
    "P@k divides by k even when a list is shorter than k; nDCG@k is linear gain (trec_eval's ndcg_cut_k).",
    "ci_low/ci_high: seeded 95% bootstrap interval of the mean (1000 resamples); zero_hit_rate: share of cases "
    "with no relevant result in the top k.",
]


def _report_table(rep: MetricReport) -> pa.Table:
    cols = ["name", "mean", "median", "p10", "min", "ci_low", "ci_high", "n", "zero_hit_rate"]
    return rep.to_arrow().select(cols).rename_columns(["measure@k", *cols[1:]])


def _context(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def metrics_view(
    con: duckdb.DuckDBPyConnection, ctx: EvalContext, by: str | None, trec: bool, rows: bool, view: str, seed: int
) -> tuple[pa.Table, dict[str, Any], list[str]]:
    """``ragtriage metrics`` by view (summary, stages, judged, latency; ``by`` a slice, ``rows`` per case) over a
    resolved context: (table, context, notes)."""
    from ragtriage.metrics import judged_report, latency_report, slices, stages, summarize
    from ragtriage.metrics.context import labels_header, population_header
    from ragtriage.metrics.measure_eval import population_counts, population_notes
    from ragtriage.metrics.measures import shown_columns
    from ragtriage.metrics.per_case import per_case_context

    run = ctx.run_id
    base: dict[str, Any] = {
        "run": run,
        "stage": ctx.stage,
        "split": ctx.split,
        "unit": ctx.unit,
        "relevance threshold": relevance_statement(ctx.threshold, ctx.threshold_source),
        "gain": "linear" if trec else ctx.gain,
        "mode": "trec-compat" if trec else "default",
        **population_header(population_counts(con, ctx, trec=trec), ctx.population),
        **labels_header(con, ctx.labels),
    }
    notes = [*NOTES, *population_notes(ctx.population)]
    if view == "latency":
        return latency_report(con, run), _context({"run": run}), ["latency in ms from events"]
    if view == "judged":
        notes = [
            f"Judged@{ctx.depth} = judged results in the top {ctx.depth} / results there (ir_measures); "
            "mostly_unjudged: more than half of the returned top k has no label."
        ]
        return judged_report(con, ctx), _context(base), notes
    if view == "stages":
        staged = stages(con, ctx)
        src = staged.per_case if rows else staged.summary
        return src, _context({**base, "stage": "candidate vs final", "candidate_k": staged.candidate_k}), []
    if by:
        return slices(con, ctx, by, seed=seed), _context(base), notes
    if rows:
        return shown_columns(per_case_context(con, ctx), ctx.gain), _context(base), notes
    rep = summarize(con, ctx, seed=seed)
    return _report_table(rep), _context(base), notes
