"""``ragtriage check --engine spark``: the leakage check of a run folder against a dataset folder, on Spark.

Only the leakage check runs on Spark (``NOT_RUN`` lists the others: they need the store, so ``ragtriage load`` and
``ragtriage check`` give them). The report is a ``CheckReport`` of that one check, so its verdict, findings and
JSON are the DuckDB command's, and ``--output`` keeps the rows as Parquet beside a snapshot ``ragtriage load`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.checks.report import CheckReport
from ragtriage.spark.folders import read_inputs
from ragtriage.spark.leakage import coverage, leakage, unchecked_cases
from ragtriage.spark.output import prepare, write_parquet, write_snapshot

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NOT_RUN = ("filter scope", "negative cases", "staleness", "unverifiable rows")
"""The checks of ``ragtriage check`` that the Spark engine does not run."""


def check_folders(spark: SparkSession, dataset: Path, run: Path, output: Path | None = None) -> CheckReport:
    """The leakage check of the run folder ``run`` against the dataset folder ``dataset`` (JSONL or Parquet tables),
    with ``output`` (a new or empty folder) receiving the snapshot and ``leakage.parquet``."""
    import os
    import tempfile

    import pyarrow.parquet as pq

    if output is not None:
        prepare(output)  # a new or empty folder (the CLI prepared it before Spark started)
    inputs = read_inputs(spark, dataset, run)
    leaks = leakage(spark, inputs)
    unchecked = unchecked_cases(spark, inputs).toArrow()
    cover = coverage(inputs, unchecked.num_rows)
    if output is not None:
        write_snapshot(spark, dataset, run, output)
        rows = pq.read_table(write_parquet(leaks, output / "leakage.parquet"))
    elif os.environ.get("SPARK_REMOTE"):
        rows = leaks.toArrow()  # a Connect server writes files on its own machine: the rows come as Arrow
    else:
        # written by Spark and read here, so the rows never gather in the JVM's heap (a run leaking on every row
        # has more leak rows than result rows; collecting them can run a default-sized driver out of memory)
        with tempfile.TemporaryDirectory(prefix="ragtriage-leaks-") as tmp:
            rows = pq.read_table(write_parquet(leaks, Path(tmp) / "leakage.parquet"))
    return CheckReport.leakage_only(inputs.run_id, rows, unchecked, cover)
