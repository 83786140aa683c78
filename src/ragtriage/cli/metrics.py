"""`ragtriage metrics`: retrieval figures of one run, each printed with its k, relevance threshold and gain.

The command's options live here; its work (and the data stack it imports) is in ``cli/metrics_run.py``, loaded
only when the command runs, so `ragtriage --help` stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragtriage.app.render.output import Format
from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app
from ragtriage.cli.metrics_options import (
    Cases,
    CasesOpt,
    Engine,
    Gain,
    Labels,
    LabelsOpt,
    MinOverlapOpt,
    Stage,
    View,
    asked,
)
from ragtriage.contract.limits import INT_MAX, INT_MIN


@app.command("metrics")
def metrics_cmd(
    db: DbOpt = DEFAULT_DB_PATH,
    run: Annotated[str, typer.Option("--run", help="run_id (see `ragtriage info`); a run FILE with --qrels.")] = "",
    k: Annotated[str, typer.Option("--k", help="Cutoffs, comma-separated (shorthand for measures).")] = "3,5,10",
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "--measure",
            "-m",
            help="A measure in ir_measures' syntax (nDCG@10, P(rel=2)@5, AP, ...); repeatable. Overrides --k.",
        ),
    ] = None,
    qrels: Annotated[
        Path | None, typer.Option("--qrels", help="Evaluate a qrels FILE against --run FILE, without a store.")
    ] = None,
    threshold: Annotated[
        int | None,
        typer.Option(
            "--threshold",
            min=INT_MIN,
            max=INT_MAX,
            help="grade >= THRESHOLD is relevant in every figure (trec_eval -l); default: the dataset's (--qrels: 1).",
        ),
    ] = None,
    min_overlap: MinOverlapOpt = None,
    by: Annotated[str | None, typer.Option("--by", help="Slice by a case or evidence field.")] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only cases of this split (dev|holdout).")] = None,
    stage: Annotated[Stage, typer.Option("--stage", help="Result stage to evaluate.")] = Stage.final,
    gain: Annotated[
        Gain,
        typer.Option(
            "--gain", help="nDCG gain: grade (nDCG@k, as trec_eval) or 2^grade-1 (printed nDCG(dcg='exp-log2')@k)."
        ),
    ] = Gain.linear,
    trec_compat: Annotated[bool, typer.Option("--trec-compat", help="Reproduce trec_eval -c -l THRESHOLD.")] = False,
    per_case_rows: Annotated[bool, typer.Option("--per-case", help="One row per case instead of aggregates.")] = False,
    view: Annotated[View, typer.Option("--view", help="summary|stages|judged|latency.")] = View.summary,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    labels: LabelsOpt = Labels.human,
    cases: CasesOpt = Cases.all,
    engine: Annotated[
        Engine,
        typer.Option(
            "--engine",
            help="duckdb: this machine; spark: Apache Spark (with --qrels/--run; pip install 'ragtriage[spark]').",
        ),
    ] = Engine.duckdb,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            help="With --engine spark: a cluster's master URL (default local[2]); SPARK_REMOTE: Spark Connect.",
        ),
    ] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Retrieval metrics of one run: P@k, R@k, RR@k, nDCG@k, AP@k, Success@k, Judged@k, zero-hit rate, or any
    measure named in ir_measures' syntax (--measure); trec_eval's layout with --format trec."""
    from ragtriage.cli._app import fail
    from ragtriage.cli.metrics_run import run_metrics

    if qrels is not None and labels is Labels.with_judge:
        raise fail("--labels with-judge reads the judged labels of a store (--db); a --qrels file has none")
    if engine is Engine.spark or spark_master:
        from ragtriage.cli.metrics_run import run_spark_metrics

        if engine is not Engine.spark:
            raise fail("--spark-master is for --engine spark")
        refused = [
            o
            for o, given in (
                ("--by", by),
                ("--split", split),
                ("--labels with-judge", labels is Labels.with_judge),
                (f"--cases {cases.value}", cases is not Cases.all),
                ("--min-overlap", min_overlap is not None),
            )
            if given
        ]
        if view is not View.summary:
            refused.append("--view")
        if stage is not Stage.final:
            refused.append("--stage")
        if refused:
            raise fail(f"--engine spark evaluates --qrels/--run files by measure: drop {', '.join(refused)}")
        run_spark_metrics(qrels, run, k, measure, threshold, gain, trec_compat, per_case_rows, spark_master, fmt)
        return
    with asked(labels, cases, threshold, min_overlap):
        run_metrics(
            db, run, k, measure, qrels, threshold, by, split, stage, gain, trec_compat, per_case_rows, view, seed, fmt
        )
