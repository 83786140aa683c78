"""`check` and `calibrate`: the safety verdict of a run, and the abstention threshold it is judged with."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.app.render.output import Format
from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, say, show, store_for
from ragtriage.cli._app import fail as _fail
from ragtriage.safe_text import visible

if TYPE_CHECKING:
    from ragtriage.checks.calibration import Calibration
    from ragtriage.checks.report import CheckReport

console = Console(soft_wrap=True)

RunOpt = Annotated[str, typer.Option("--run", help="run_id to check (see `ragtriage info`).")]
CheckRunOpt = Annotated[
    str, typer.Option("--run", help="run_id to check (see `ragtriage info`); with --engine spark, the run folder.")
]


EXIT_NOT_CHECKED = 3
"""`check`'s exit code when nothing could be checked (no case has a principal, or no manifest): not a pass."""


@app.command()
def check(
    run: CheckRunOpt,
    db: DbOpt = DEFAULT_DB_PATH,
    fmt: FormatOpt = Format.table,
    strict: Annotated[bool, typer.Option(help="Also exit 1 on scope violations and failed negative cases.")] = False,
    limit: Annotated[
        int, typer.Option(help="Rows per check in table and markdown output (0: all); json and csv list all.")
    ] = 20,
    engine: Annotated[
        str,
        typer.Option(
            help="duckdb: every check, on the store. spark: the leakage check alone, on Spark, of the --run folder "
            "against --dataset (JSONL or Parquet tables; pip install 'ragtriage[spark]'); see docs/scale.md."
        ),
    ] = "duckdb",
    dataset: Annotated[
        Path | None, typer.Option(help="--engine spark: the dataset folder (cases, documents, dataset.json).")
    ] = None,
    spark_master: Annotated[
        str | None, typer.Option(help="--engine spark: the Spark master (default local[2]; SPARK_REMOTE: Connect).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            help="--engine spark: a new folder for leakage.parquet and a Parquet snapshot of the inputs that "
            "`ragtriage load --dataset DIR/dataset --run DIR/run` reads."
        ),
    ] = None,
) -> None:
    """Leakage, filter scope, negative cases and stale documents of one run.

    Exit 0: nothing leaked in the cases that could be checked (--strict: and no scope violation or failed negative
    case). Exit 1: a leak, or a missing optional filter that broadened access. Exit 2: bad input. Exit 3: nothing
    could be checked (no case has a principal, or no corpus manifest): the verdict is NOT CHECKED, never a pass.
    """
    from ragtriage.app.triage import check_output
    from ragtriage.checks import check_run

    if engine not in ("duckdb", "spark"):
        raise _fail(f"--engine {engine}: use duckdb or spark")
    if engine == "spark":
        report = _spark_report(run, dataset, spark_master, output)
    elif dataset is not None or spark_master is not None or output is not None:
        raise _fail("--dataset, --spark-master and --output go with --engine spark")
    if engine == "duckdb":
        with store_for(db) as con:
            report = check_run(con, run)
    show(check_output(report, reader=fmt in (Format.table, Format.markdown), limit=limit, spark=engine == "spark"), fmt)
    from ragtriage.checks import CheckVerdict

    if report.verdict is CheckVerdict.NOT_CHECKED:
        raise typer.Exit(EXIT_NOT_CHECKED)
    ok = report.strict_passed if strict else report.passed
    if not ok:
        raise typer.Exit(1)


def _spark_report(run: str, dataset: Path | None, master: str | None, output: Path | None) -> CheckReport:
    """The leakage check on Spark; every input, Spark or output problem is one message and exit 2."""
    from ragtriage.cli._app import input_errors

    if dataset is None:
        raise _fail("--engine spark needs --dataset (the dataset folder) and --run (the run folder)")
    from ragtriage.spark import SparkUnavailable, get_session
    from ragtriage.spark.output import OutputExists, prepare

    try:
        if output is not None:
            prepare(output)  # before Spark starts: a folder that is not new is refused at once
        spark = get_session(master)
    except (SparkUnavailable, OutputExists) as exc:
        raise _fail(exc) from exc
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    from ragtriage.spark.check import check_folders

    try:
        return check_folders(spark, dataset, Path(run), output)
    except input_errors() as exc:  # bad input, and an --output folder that is not new (a ValueError)
        raise _fail(exc) from exc
    except (PySparkException, Py4JError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _fail(f"Spark failed: {first}") from exc


def _print_calibration(cal: Calibration) -> None:
    from rich.table import Table

    table = Table(
        "threshold",
        "answerable kept",
        "negatives abstained",
        "",
        title=visible(
            f"run {cal.run_id}: trade-off "
            "(kept: top score >= threshold; abstained: top score < threshold or no results)"
        ),
        title_justify="left",
    )
    for row in cal.table.to_pylist():
        mark = "<- chosen" if math.isclose(row["threshold"], cal.threshold) else ""
        abst = "n/a" if not row["negatives_total"] else f"{row['abstained_rate']:.1%}"
        table.add_row(
            f"{row['threshold']:.6g}",
            f"{row['answerable_kept']}/{row['answerable_total']} ({row['kept_rate']:.1%})",
            f"{row['negatives_abstained']}/{row['negatives_total']} ({abst})",
            mark,
        )
    console.print(table)
    how = f"highest threshold keeping >= {cal.target_recall:.0%} of answerable cases" if cal.target_recall else "given"
    scope = f" (split {cal.split})" if cal.split else ""
    console.print(
        f"threshold {cal.threshold:.6g} ({how}){scope}: keeps {cal.answerable_kept}/{cal.answerable_total} answerable, "
        f"abstains on {cal.negatives_abstained}/{cal.negatives_total} negatives; "
        f"{cal.excluded} answerable case(s) left out (top result not relevant or unscored)",
        markup=False,
        highlight=False,
    )


@app.command("calibrate")
def calibrate_cmd(
    run: RunOpt,
    db: DbOpt = DEFAULT_DB_PATH,
    target_recall: Annotated[
        float | None, typer.Option(help="Share of answerable cases to keep (default printed with the result).")
    ] = None,
    threshold: Annotated[float | None, typer.Option(help="Store this threshold instead of choosing one.")] = None,
    split: Annotated[str | None, typer.Option(help="Calibrate on one split only (e.g. dev).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the trade-off table; store nothing.")] = False,
) -> None:
    """Choose a score threshold for one run from the labels and store it with that run."""
    from ragtriage.checks import DEFAULT_TARGET_RECALL, calibrate, store_threshold
    from ragtriage.cli import arg_checks

    if target_recall is not None and threshold is not None:
        raise _fail(ValueError("give --target-recall or --threshold, not both"))
    arg_checks.between("--target-recall", target_recall, 0.0, 1.0, open_low=True)
    arg_checks.finite("--threshold", threshold)
    with store_for(db, read_only=dry_run) as con:  # a CalibrationError is a ValueError: exit 2
        cal = calibrate(
            con, run, target_recall=target_recall or DEFAULT_TARGET_RECALL, threshold=threshold, split=split
        )
        _print_calibration(cal)
        if dry_run:
            console.print("dry run: nothing stored")
            return
        store_threshold(con, run, cal.threshold)
    say(f"stored score_threshold {cal.threshold:.6g} for run {run}")
