"""The work of `ragtriage metrics` (its options are in ``cli/metrics.py``): open the store (or start Spark),
compute, print."""

from __future__ import annotations

from pathlib import Path

import duckdb

from ragtriage.app.render.output import Format, Output
from ragtriage.cli._app import fail, open_existing, say, show
from ragtriage.cli.metrics_options import Gain, Stage, View
from ragtriage.contract.errors import ValidationFailed
from ragtriage.metrics import (
    MetricsError,
)
from ragtriage.metrics.context import labels_header, parse_ks, resolve
from ragtriage.metrics.measure_eval import MeasureResult, evaluate_run
from ragtriage.metrics.measures import measures_for_ks
from ragtriage.store import StoreError


def cutoffs(text: str) -> tuple[int, ...]:
    """``--k "3,5,10"`` as cutoffs: the one place the command line's string is read (exit 2 when it is not)."""
    try:
        ks = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise fail(f"--k {text!r}: give comma-separated positive integers, e.g. 3,5,10") from None
    try:
        return parse_ks(ks)
    except MetricsError as exc:
        raise fail(f"--k {text!r}: {exc}") from None


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
        raise fail("give --run RUN_ID (see `ragtriage info --db DB`)")
    if fmt is Format.trec and (view is not View.summary or by):
        raise fail("--format trec prints measures: use it without --view/--by")
    if trec_compat and by:
        raise fail("--trec-compat prints trec_eval's measures over every query: use it without --by")
    # measures by name: --measure, trec_eval's layout, a store-less evaluation, and trec-compat in every format
    ks = cutoffs(k)
    by_name = measure or (fmt is Format.trec) or qrels is not None or trec_compat
    measures_only = bool(by_name) and not by and view is View.summary
    try:
        con, run_id, load_notes = _open(db, qrels, run, threshold, measures_only)
    except (StoreError, ValueError, ValidationFailed, OSError, duckdb.Error) as exc:
        raise fail(exc) from exc
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
        from ragtriage.app.evaluate import metrics_view

        table, context, notes = metrics_view(con, ctx, by, trec_compat, per_case_rows, view.value, seed)
    except (MetricsError, StoreError, duckdb.Error) as exc:
        raise fail(exc) from exc
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
    from ragtriage.app.evaluate import memory_store

    return memory_store(qrels, Path(run), threshold=threshold, measures_only=measures_only)


def emit_measures(res: MeasureResult, fmt: Format, rows: bool, load_notes: list[str]) -> None:
    """Measures by name: trec_eval's layout (the header on stderr as ``#`` lines, so stdout parses as
    trec_eval's), or the aggregates (one row per measure, with the parameters each figure was made with) or one
    column per measure and case, under the population header."""
    notes = [*res.notes, *load_notes]
    if fmt is Format.trec:
        for name, value in res.context.items():
            if value is not None:
                say(f"# {name}: {value}", err=True)
        for note in notes:
            say(f"# {note}", err=True)
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


def run_spark_metrics(
    qrels: Path | None,
    run: str,
    k: str,
    measure: list[str] | None,
    threshold: int | None,
    gain: Gain,
    trec_compat: bool,
    per_case_rows: bool,
    master: str | None,
    fmt: Format,
) -> None:
    """`metrics --engine spark`: the measures of a qrels and a run file (or Parquet folder) computed by Apache Spark
    (``ragtriage.spark``), printed exactly as the DuckDB engine prints them. Every input or Spark error exits 2
    with one line."""
    if qrels is None or not run:
        raise fail("--engine spark evaluates files: give --qrels FILE and --run FILE (TREC text or Parquet)")
    names = measure or measures_for_ks(cutoffs(k), trec=trec_compat or fmt is Format.trec)
    from ragtriage.spark import SparkUnavailable, get_session
    from ragtriage.spark.evaluate import evaluate

    try:
        spark = get_session(master)
        _quiet(spark)
        res = evaluate(
            spark, str(qrels), run, names, trec_compat=trec_compat, threshold=threshold, gain=gain.value
        ).result()
    except (SparkUnavailable, ValueError, OSError) as exc:
        raise fail(exc) from exc
    except Exception as exc:
        if not _spark_error(exc):
            raise
        raise fail(f"Spark: {str(exc).strip().splitlines()[0]}") from exc
    emit_measures(res, fmt, per_case_rows, [])


def _quiet(spark: object) -> None:
    """Spark's own log at ERROR (a classic session; Spark Connect has no SparkContext here)."""
    try:
        spark.sparkContext.setLogLevel("ERROR")  # type: ignore[attr-defined]
    except Exception:  # Spark Connect: the server's log is the server's
        return


def _spark_error(exc: Exception) -> bool:
    from pyspark.errors import PySparkException

    return isinstance(exc, PySparkException)
