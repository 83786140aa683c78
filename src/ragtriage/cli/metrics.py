"""`ragtriage metrics`: retrieval figures of one run, each printed with its k, relevance threshold and gain."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, open_existing, show
from ragtriage.output import Format, Output

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ragtriage.metrics import MetricReport

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class View(StrEnum):
    summary = "summary"
    stages = "stages"
    judged = "judged"
    latency = "latency"


class Stage(StrEnum):
    final = "final"
    candidate = "candidate"


class Gain(StrEnum):
    exponential = "exponential"
    linear = "linear"


def _report_table(rep: MetricReport) -> pa.Table:
    cols = ["name", "mean", "median", "p10", "min", "ci_low", "ci_high", "n", "zero_hit_rate"]
    return rep.to_arrow().select(cols).rename_columns(["measure@k", *cols[1:]])


def _context(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


NOTES = [
    "P@k divides by k even when a list is shorter than k; R/nDCG/AP exclude cases without a relevant label.",
    "ci_low/ci_high: seeded 95% bootstrap interval of the mean (1000 resamples); zero_hit_rate: share of cases "
    "with no relevant result in the top k.",
]
TREC_NOTES = [
    "trec_eval -c semantics: order by score desc then docno desc, every query with a qrels line, linear gain, "
    "recip_rank without cutoff (docs/metrics.md).",
]


@app.command("metrics")
def metrics_cmd(
    db: DbOpt = DEFAULT_DB_PATH,
    run: Annotated[str, typer.Option("--run", help="run_id (see `ragtriage info`).")] = "",
    k: Annotated[str, typer.Option("--k", help="Cutoffs, comma-separated.")] = "3,5,10",
    by: Annotated[str | None, typer.Option("--by", help="Slice by a case or evidence field.")] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only cases of this split (dev|holdout).")] = None,
    stage: Annotated[Stage, typer.Option("--stage", help="Result stage to evaluate.")] = Stage.final,
    gain: Annotated[Gain, typer.Option("--gain", help="nDCG gain: 2^grade-1 or grade.")] = Gain.exponential,
    trec_compat: Annotated[bool, typer.Option("--trec-compat", help="Reproduce trec_eval -c -l THRESHOLD.")] = False,
    per_case_rows: Annotated[bool, typer.Option("--per-case", help="One row per case instead of aggregates.")] = False,
    view: Annotated[View, typer.Option("--view", help="summary|stages|judged|latency.")] = View.summary,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Retrieval metrics of one run: P@k, R@k, RR@k, nDCG@k, AP@k, Success@k, Judged@k, zero-hit rate."""
    import duckdb

    from ragtriage.metrics import MetricsError
    from ragtriage.store import StoreError

    if not run:
        err.print("give --run RUN_ID (see `ragtriage info --db DB`)", markup=False, highlight=False)
        raise typer.Exit(2)
    try:
        con = open_existing(db, read_only=True)
    except (StoreError, duckdb.Error) as exc:
        err.print(str(exc), markup=False, highlight=False)
        raise typer.Exit(2) from exc
    try:
        table, context, notes = _compute(
            con, run, k, by, split, stage.value, gain.value, trec_compat, per_case_rows, view, seed
        )
    except (MetricsError, StoreError, duckdb.Error) as exc:
        err.print(str(exc), markup=False, highlight=False)
        raise typer.Exit(2) from exc
    finally:
        con.close()
    show(Output(table, context, notes), fmt)


def _compute(
    con: duckdb.DuckDBPyConnection,
    run: str,
    k: str,
    by: str | None,
    split: str | None,
    stage: str,
    gain: str,
    trec: bool,
    rows: bool,
    view: View,
    seed: int,
) -> tuple[pa.Table, dict[str, Any], list[str]]:
    from ragtriage.metrics import (
        judged_report,
        latency_report,
        per_case,
        slices,
        stages,
        summarize,
        trec_per_query,
        trec_summary,
    )

    threshold = con.execute("SELECT relevance_threshold, unit FROM current_dataset").fetchone()
    base: dict[str, Any] = {
        "run": run,
        "stage": stage,
        "split": split,
        "unit": threshold[1] if threshold else None,
        "relevance threshold": f"grade >= {threshold[0]}" if threshold else None,
        "gain": "linear" if trec else gain,
        "mode": "trec-compat" if trec else "default",
    }
    if view is View.latency:
        return latency_report(con, run), _context({"run": run}), ["latency in ms from events"]
    if view is View.judged:
        depth = max(int(x) for x in k.split(",") if x.strip())
        notes = [
            f"Judged@{depth} = judged results in the top {depth} / {depth}; mostly_unjudged: more than half "
            "of the returned top k has no label."
        ]
        return judged_report(con, run, depth, stage=stage, split=split), _context(base), notes
    if view is View.stages:
        both = stages(con, run, k, gain=gain, split=split)
        src = both.per_case if rows else both.summary
        return src, _context({**base, "stage": "candidate vs final", "candidate_k": both.candidate_k}), []
    if trec:
        if rows:
            return trec_per_query(con, run, k, stage=stage, split=split), _context(base), TREC_NOTES
        return _report_table(trec_summary(con, run, k, stage=stage, split=split, seed=seed)), _context(base), TREC_NOTES
    if by:
        return slices(con, run, by, k, stage=stage, gain=gain, split=split, seed=seed), _context(base), NOTES
    if rows:
        return per_case(con, run, k, stage=stage, gain=gain, split=split), _context(base), NOTES
    rep = summarize(con, run, k, stage=stage, gain=gain, split=split, seed=seed)
    ctx = {**base, "cases": rep.n_cases, "without relevant label": rep.n_without_relevant}
    return _report_table(rep), _context(ctx), NOTES
