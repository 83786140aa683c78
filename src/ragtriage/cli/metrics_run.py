"""The work of `ragtriage metrics` (its options are in ``cli/metrics.py``): open the store, compute, print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import typer
from rich.console import Console

from ragtriage.cli._app import open_existing, show
from ragtriage.cli.metrics_options import Gain, Stage, View
from ragtriage.contract.errors import ValidationFailed
from ragtriage.metrics import (
    MetricReport,
    MetricsError,
    judged_report,
    latency_report,
    slices,
    stages,
    summarize,
)
from ragtriage.metrics.context import EvalContext, labels_header, parse_ks, population_header, resolve
from ragtriage.metrics.measure_eval import MeasureResult, evaluate_run, population_counts, population_notes
from ragtriage.metrics.measures import measures_for_ks, shown_columns
from ragtriage.metrics.per_case import per_case_context
from ragtriage.output import Format, Output
from ragtriage.store import StoreError

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _report_table(rep: MetricReport) -> pa.Table:
    cols = ["name", "mean", "median", "p10", "min", "ci_low", "ci_high", "n", "zero_hit_rate"]
    return rep.to_arrow().select(cols).rename_columns(["measure@k", *cols[1:]])


def _context(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


NOTES = [
    "P@k divides by k even when a list is shorter than k; nDCG@k is linear gain (trec_eval's ndcg_cut_k).",
    "ci_low/ci_high: seeded 95% bootstrap interval of the mean (1000 resamples); zero_hit_rate: share of cases "
    "with no relevant result in the top k.",
]


def cutoffs(text: str) -> tuple[int, ...]:
    """``--k "3,5,10"`` as cutoffs: the one place the command line's string is read (exit 2 when it is not)."""
    try:
        ks = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        err.print(f"--k {text!r}: give comma-separated positive integers, e.g. 3,5,10", markup=False, highlight=False)
        raise typer.Exit(2) from None
    try:
        return parse_ks(ks)
    except MetricsError as exc:
        err.print(f"--k {text!r}: {exc}", markup=False, highlight=False)
        raise typer.Exit(2) from None


def run_metrics(
    db: Path,
    run: str,
    k: str,
    measure: list[str] | None,
    qrels: Path | None,
    threshold: int | None,
    by: str | None,
    split: str | None,
    stage: Stage,
    gain: Gain,
    trec_compat: bool,
    per_case_rows: bool,
    view: View,
    seed: int,
    fmt: Format,
) -> None:
    """`ragtriage metrics` with its options parsed."""
    if not run:
        err.print("give --run RUN_ID (see `ragtriage info --db DB`)", markup=False, highlight=False)
        raise typer.Exit(2)
    if fmt is Format.trec and (view is not View.summary or by):
        err.print("--format trec prints measures: use it without --view/--by", markup=False, highlight=False)
        raise typer.Exit(2)
    if trec_compat and by:
        err.print(
            "--trec-compat prints trec_eval's measures over every query: use it without --by",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(2)
    # measures by name: --measure, trec_eval's layout, a store-less evaluation, and trec-compat in every format
    ks = cutoffs(k)
    by_name = measure or (fmt is Format.trec) or qrels is not None or trec_compat
    measures_only = bool(by_name) and not by and view is View.summary
    try:
        con, run_id, load_notes = _open(db, qrels, run, threshold, measures_only)
    except (StoreError, ValueError, ValidationFailed, OSError, duckdb.Error) as exc:
        err.print(str(exc), markup=False, highlight=False)
        raise typer.Exit(2) from exc
    try:
        if measures_only:
            names = measure or measures_for_ks(ks, trec=trec_compat or fmt is Format.trec)
            res = evaluate_run(
                con, run_id, names, stage=stage.value, split=split, gain=gain.value, trec_compat=trec_compat
            )
            if qrels is None:
                res.context.update(labels_header(con))
            emit_measures(res, fmt, per_case_rows, load_notes)
            return
        ctx = resolve(con, run_id, ks, stage=stage.value, gain=gain.value, split=split)
        table, context, notes = _compute(con, ctx, by, trec_compat, per_case_rows, view, seed)
    except (MetricsError, StoreError, duckdb.Error) as exc:
        err.print(str(exc), markup=False, highlight=False)
        raise typer.Exit(2) from exc
    finally:
        con.close()
    show(Output(table, context, notes), fmt)


def _open(
    db: Path, qrels: Path | None, run: str, threshold: int | None, measures_only: bool
) -> tuple[duckdb.DuckDBPyConnection, str, list[str]]:
    """The store, run id and load notes: the store file, or (``--qrels``) an in-memory store of the two files
    (``measures_only``: one that holds only what measures by name read, when the files allow it)."""
    if qrels is None:
        return open_existing(db, read_only=True), run, []
    from ragtriage.evaluation import memory_store

    return memory_store(qrels, Path(run), threshold=threshold, measures_only=measures_only)


def emit_measures(res: MeasureResult, fmt: Format, rows: bool, load_notes: list[str]) -> None:
    """Measures by name: trec_eval's layout (the header on stderr as ``#`` lines, so stdout parses as
    trec_eval's), or the aggregates (one row per measure, with the parameters each figure was made with) or one
    column per measure and case, under the population header."""
    notes = [*res.notes, *load_notes]
    if fmt is Format.trec:
        for name, value in res.context.items():
            if value is not None:
                err.print(f"# {name}: {value}", markup=False, highlight=False)
        for note in notes:
            err.print(f"# {note}", markup=False, highlight=False)
        show(Output(res.trec_rows(per_query=rows)), fmt)
        return
    table = res.wide if rows else res.aggregate
    if not rows and res.mode != "trec-compat":
        table = table.drop_columns(["trec"])
    notes.append(
        "A parameter left out takes the dataset's threshold (rel) or --gain (dcg); 'parameters' says which. "
        "Sums for NumQ/NumRet/NumRel/NumRelRet, means elsewhere."
    )
    show(Output(table, res.context, notes), fmt)


def _compute(
    con: duckdb.DuckDBPyConnection, ctx: EvalContext, by: str | None, trec: bool, rows: bool, view: View, seed: int
) -> tuple[pa.Table, dict[str, Any], list[str]]:
    """The figures of one view over the command's resolved context."""
    run = ctx.run_id
    base: dict[str, Any] = {
        "run": run,
        "stage": ctx.stage,
        "split": ctx.split,
        "unit": ctx.unit,
        "relevance threshold": f"grade >= {ctx.threshold} ({ctx.threshold_source})",
        "gain": "linear" if trec else ctx.gain,
        "mode": "trec-compat" if trec else "default",
        **population_header(population_counts(con, ctx, trec=trec), ctx.population),
        **labels_header(con, ctx.labels),
    }
    notes = [*NOTES, *population_notes(ctx.population)]
    if view is View.latency:
        return latency_report(con, run), _context({"run": run}), ["latency in ms from events"]
    if view is View.judged:
        notes = [
            f"Judged@{ctx.depth} = judged results in the top {ctx.depth} / results there (ir_measures); "
            "mostly_unjudged: more than half of the returned top k has no label."
        ]
        return judged_report(con, ctx), _context(base), notes
    if view is View.stages:
        staged = stages(con, ctx)
        src = staged.per_case if rows else staged.summary
        return src, _context({**base, "stage": "candidate vs final", "candidate_k": staged.candidate_k}), []
    if by:
        return slices(con, ctx, by, seed=seed), _context(base), notes
    if rows:
        return shown_columns(per_case_context(con, ctx), ctx.gain), _context(base), notes
    rep = summarize(con, ctx, seed=seed)
    return _report_table(rep), _context(base), notes
