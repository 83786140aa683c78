"""The leakage check on Spark: the DuckDB check's own statement (``checks.leakage``) rendered as Spark SQL.

Nothing of the rule is restated here. The check reads the store's tables ``results``, ``cases``, ``documents`` and
``current_dataset``; on Spark those are DataFrames with the same columns (``LeakageInputs``), registered as
temporary views under names of their own, and ``dialect.to_spark`` writes the DuckDB statement for them. The rows
are the DuckDB check's rows: one per (result row, rule broken), any stage, in ``LEAK_ORDER``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragtriage.checks.leakage import LEAKAGE_SQL, UNCHECKED_SQL, Coverage
from ragtriage.spark.dialect import to_spark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The columns (Spark DDL types) the check reads from each store table; ``conform`` adds any other as NULL.
COLUMNS: Mapping[str, Mapping[str, str]] = {
    "results": {
        "run_id": "string",
        "case_id": "string",
        "stage": "string",
        "rank": "int",
        "document_id": "string",
        "chunk_id": "string",
        "unit_id": "string",
        "score": "double",
        "snippet": "string",
        "metadata": "string",
    },
    "cases": {
        "case_id": "string",
        "principal_id": "string",
        "principal_groups": "array<string>",
        "principal_tenant": "string",
    },
    "documents": {
        "document_id": "string",
        "chunk_id": "string",
        "unit_id": "string",
        "title": "string",
        "text": "string",
        "doc_type": "string",
        "source_system": "string",
        "language": "string",
        "region": "string",
        "product": "string",
        "tenant": "string",
        "acl": "array<string>",
        "status": "string",
        "effective_from": "date",
        "effective_to": "date",
        "chunk_kind": "string",
        "version": "string",
    },
}


@dataclass(frozen=True)
class LeakageInputs:
    """One run and the dataset it is checked against, as Spark DataFrames shaped like the store's tables.

    ``results``: the run's result rows (``COLUMNS["results"]``; ``unit_id`` as the store derives it);
    ``cases``: one row per case with its principal; ``documents``: the corpus manifest; ``acl_required``: the
    dataset's acl policy (dataset.json). Data partitioned by ``case_id`` keeps a case's rows on one executor.
    """

    run_id: str
    results: DataFrame
    cases: DataFrame
    documents: DataFrame
    acl_required: bool = False


def conform(frame: DataFrame, table: str) -> DataFrame:
    """``frame`` with exactly the columns the check reads from ``table``, cast to their types; a column the frame
    lacks (an optional manifest attribute) is NULL, as an absent field is in the store."""
    from pyspark.sql import functions as F

    have = set(frame.columns)
    return frame.select(
        *[
            (F.col(name) if name in have else F.lit(None)).cast(kind).alias(name)
            for name, kind in COLUMNS[table].items()
        ]
    )


def _views(spark: SparkSession, inputs: LeakageInputs) -> dict[str, str]:
    """The inputs as temporary views under fresh names, so a user's own ``results`` view is never read. They live
    as long as the session: on Spark Connect a plan resolves its views when it runs, not when it is built."""
    tag = uuid.uuid4().hex[:12]
    frames = {
        "results": conform(inputs.results, "results"),
        "cases": conform(inputs.cases, "cases"),
        "documents": conform(inputs.documents, "documents"),
        "current_dataset": spark.sql(f"SELECT {str(inputs.acl_required).upper()} AS acl_required"),
    }
    names = {table: f"ragtriage_{table}_{tag}" for table in frames}
    for table, frame in frames.items():
        frame.createOrReplaceTempView(names[table])
    return names


def _run(spark: SparkSession, inputs: LeakageInputs, sql: str) -> DataFrame:
    return spark.sql(to_spark(sql, tables=_views(spark, inputs), params={"run_id": inputs.run_id}))


def leakage(spark: SparkSession, inputs: LeakageInputs) -> DataFrame:
    """Every leaked result row of the run, one row per (result row, rule broken), any stage: the columns and rows
    of ``checks.leakage.leakage`` on the same data, sorted in ``LEAK_ORDER``."""
    return _run(spark, inputs, LEAKAGE_SQL)


def unchecked_cases(spark: SparkSession, inputs: LeakageInputs) -> DataFrame:
    """Cases without a principal (``checks.leakage.unchecked_cases``): reported as unchecked, never as passing."""
    return _run(spark, inputs, UNCHECKED_SQL)


def coverage(inputs: LeakageInputs, unchecked: int) -> Coverage:
    """The check's coverage: how many cases, how many without a principal, whether there is a manifest."""
    return Coverage(inputs.cases.count(), unchecked, not inputs.documents.isEmpty())
