"""A Spark check's output folder: the result rows as Parquet beside the inputs in the layout ``ragtriage load``
reads, so a store (and the TUI) can be opened on what the cluster checked.

Layout of ``DIR``::

    dataset/   dataset.json, cases.parquet, labels.parquet, documents.parquet   (the contract's columns)
    run/       run.json, results.parquet
    leakage.parquet                                                            (the check's rows, LEAK_ORDER)

``ragtriage load --dataset DIR/dataset --run DIR/run`` loads the snapshot; ``ragtriage check`` on that store gives
the rows of ``leakage.parquet`` again (a test holds the two equal). Each table is written by Spark as one file (one
partition), to a path the driver can reach; a folder that is not empty is refused, never written into.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.contract.fields import CASES, DOCUMENTS, LABELS, RESULTS
from ragtriage.spark.folders import read_table
from ragtriage.store.discover import discover_dataset, discover_run

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class OutputExists(ValueError):
    """The output folder already holds files: ragtriage never writes into (or over) an existing output."""


def write_parquet(frame: DataFrame, path: Path) -> Path:
    """``frame`` as the single Parquet file ``path`` (Spark writes a folder of parts; one part is moved out)."""
    parts = path.with_name(path.name + ".parts")
    frame.coalesce(1).write.mode("errorifexists").parquet(str(parts))
    (part,) = sorted(parts.glob("part-*.parquet"))
    part.rename(path)
    shutil.rmtree(parts)
    return path


def prepare(out: Path) -> Path:
    """``out`` ready to be written: created if missing, refused if it holds anything."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise OutputExists(f"{out} exists and is not an empty folder: pass a new --output folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_snapshot(spark: SparkSession, dataset: Path, run: Path, out: Path) -> None:
    """The dataset and run folders' tables, read by Spark, as one Parquet file each under ``out/dataset`` and
    ``out/run`` with their manifests copied: a snapshot ``ragtriage load`` reads."""
    files = discover_dataset(dataset)
    run_files = discover_run(run, None)
    (out / "dataset").mkdir()
    (out / "run").mkdir()
    tables = [(files.cases.path, CASES, out / "dataset" / "cases.parquet")]
    tables.append((files.labels.path, LABELS, out / "dataset" / "labels.parquet"))
    if files.documents is not None:
        tables.append((files.documents.path, DOCUMENTS, out / "dataset" / "documents.parquet"))
    tables.append((run_files.results, RESULTS, out / "run" / "results.parquet"))
    for source, table, target in tables:
        write_parquet(read_table(spark, source, table), target)
    if files.manifest is not None:
        shutil.copyfile(files.manifest, out / "dataset" / "dataset.json")
    if run_files.manifest is not None:
        shutil.copyfile(run_files.manifest, out / "run" / "run.json")
