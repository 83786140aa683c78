"""A dataset folder and a run folder read by Spark, as the store's tables: the inputs of the Spark leakage check.

The folders are those ``ragtriage load`` reads (found by the loader's own ``discover_dataset``/``discover_run``,
manifests parsed by the contract), with their tables as JSONL or Parquet, which Spark reads in parallel; the column
types come from the contract's field list. A row Spark cannot trust is refused, never dropped: a malformed JSON line
fails the read, and a required field that is empty (or a stage that is not candidate/final) is an
``InputRefused`` naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.fields import CASES, DOCUMENTS, INT_MAX, RESULTS, STAGES, Table
from ragtriage.contract.manifest import parse_dataset_manifest, parse_run_manifest
from ragtriage.spark.leakage import LeakageInputs
from ragtriage.store.dataset_rules import document_unit
from ragtriage.store.discover import discover_dataset, discover_run

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_SPARK_KINDS = {
    "string": "string",
    "int": "bigint",
    "float": "double",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "string_list": "array<string>",
    "object": "string",  # a JSON object is read as its text, as the store keeps it
}
_JSON = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
_PARQUET = (".parquet", ".pq")
_PRINCIPAL = "id string, groups array<string>, tenant string"


def _ddl(table: Table) -> str:
    return ", ".join(f"`{f.name}` {_SPARK_KINDS[f.kind]}" for f in table.fields)


def read_table(spark: SparkSession, path: Path, table: Table) -> DataFrame:
    """One contract table (JSONL or Parquet) with the contract's column types; other formats are refused."""
    name = path.name.lower()
    if path.is_dir() or name.endswith(_PARQUET):
        return spark.read.parquet(str(path))
    if name.endswith(_JSON):
        return spark.read.json(str(path), schema=_ddl(table), mode="FAILFAST")
    raise ValidationFailed(
        [Finding(str(path), None, None, "format", "the Spark engine reads JSONL or Parquet tables: convert this one")]
    )


def _text(frame: DataFrame, column: str) -> DataFrame:
    """A JSON object column as the store's text of it, whatever the file held (Parquet: a struct or text; JSONL:
    the line's text): parsed and written again, minified with non-ASCII characters unescaped, as the loader
    does (a mention of ``ÜBER-7`` written ``\\u00dcBER-7`` is still found). Text that is not JSON fails the read.
    Spark writes a parsed object's keys in sorted order, the loader in the file's order."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    if column not in frame.columns:
        return frame.withColumn(column, F.lit(None).cast("string"))
    if isinstance(frame.schema[column].dataType, StringType):
        return frame.withColumn(column, F.to_json(F.parse_json(column)))
    return frame.withColumn(column, F.to_json(column))


def _refuse_missing(frame: DataFrame, path: Path, checks: dict[str, tuple[str, str]]) -> None:
    """``checks``: field -> (SQL condition a bad row meets, what is wrong); one finding per field, with a count,
    all counted in one pass."""
    from pyspark.sql import functions as F

    sums = [F.sum(F.expr(f"CAST({cond} AS INT)")).alias(f) for f, (cond, _) in checks.items()]
    counts = frame.select(*sums).first()
    findings = [
        Finding(str(path), None, f, "bad-value", f"{n:,} row(s): {checks[f][1]}")
        for f in checks
        if counts is not None and (n := counts[f] or 0)
    ]
    if findings:
        raise ValidationFailed(findings)


def read_inputs(spark: SparkSession, dataset: Path, run: Path) -> LeakageInputs:
    """The Spark leakage check's inputs from a dataset folder (cases, documents, dataset.json) and a run folder
    (results, run.json). Bad input raises ``ValidationFailed`` (exit 2 in the CLI)."""
    from pyspark.sql import functions as F

    files = discover_dataset(dataset)
    manifest, findings = parse_dataset_manifest(files.manifest, default_name=dataset.name)
    run_files = discover_run(run, None)
    run_json, run_findings = parse_run_manifest(run_files.manifest) if run_files.manifest else (None, [])
    if manifest is None or run_json is None or findings or run_findings:
        missing = [] if run_files.manifest else [Finding(str(run), None, None, "missing-file", "no run.json")]
        raise ValidationFailed([*findings, *run_findings, *missing])
    if files.cases.kind != "native":
        raise ValidationFailed([Finding(str(files.cases.path), None, None, "format", "cases need principals")])

    cases = _text(read_table(spark, files.cases.path, CASES), "principal")
    _refuse_missing(cases, files.cases.path, {"id": ("id IS NULL", "no id")})
    principal = F.from_json("principal", _PRINCIPAL)
    cases = cases.select(
        F.col("id").alias("case_id"),
        principal["id"].alias("principal_id"),
        principal["groups"].alias("principal_groups"),
        principal["tenant"].alias("principal_tenant"),
    )
    if files.documents is not None:
        documents = read_table(spark, files.documents.path, DOCUMENTS)
        _refuse_missing(documents, files.documents.path, {"document_id": ("document_id IS NULL", "no document_id")})
        documents = documents.withColumn("unit_id", F.expr(document_unit(manifest.unit)))
    else:
        documents = spark.createDataFrame([], _ddl(DOCUMENTS) + ", unit_id string")

    results = _text(read_table(spark, run_files.results, RESULTS), "metadata")
    if "stage" not in results.columns:
        results = results.withColumn("stage", F.lit(None).cast("string"))
    results = results.withColumn("stage", F.coalesce("stage", F.lit("final")))  # the contract's default stage
    stages = ", ".join(f"'{s}'" for s in STAGES)
    _refuse_missing(
        results,
        run_files.results,
        {
            "case_id": ("case_id IS NULL", "no case_id"),
            "document_id": ("document_id IS NULL", "no document_id"),
            "rank": (f"rank IS NULL OR rank < 1 OR rank > {INT_MAX}", f"no rank, or a rank outside 1..{INT_MAX}"),
            "stage": (f"stage NOT IN ({stages})", f"stage is not one of {'|'.join(STAGES)}"),
        },
    )
    # the store's ``results`` view: the unit is the document in document mode, else the chunk
    unit = "document_id" if manifest.unit == "document" else "chunk_id"
    results = results.withColumn("run_id", F.lit(str(run_json["run_id"]))).withColumn("unit_id", F.col(unit))
    return LeakageInputs(str(run_json["run_id"]), results, cases, documents, manifest.acl_required)
