"""`ragtriage metrics --engine spark`: the measures of a qrels and a run file (or Parquet folder) computed by
Apache Spark (``ragtriage.spark``), printed exactly as the DuckDB engine prints them."""

from __future__ import annotations

from pathlib import Path

from ragtriage.cli._app import fail
from ragtriage.cli.metrics_options import Gain
from ragtriage.cli.metrics_run import cutoffs, emit_measures
from ragtriage.metrics.measures import measures_for_ks
from ragtriage.output import Format


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
    """Start (or join) a Spark session, evaluate, print; every input or Spark error exits 2 with one line."""
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
