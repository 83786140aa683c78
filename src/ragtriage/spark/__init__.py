"""The measures on Apache Spark: the same definitions as the DuckDB engine, rendered as Spark SQL, for runs that
live as Parquet on a cluster. pyspark is the optional ``spark`` extra; nothing here imports it at import time."""

from __future__ import annotations

from ragtriage.spark.evaluate import SparkEvaluation, evaluate
from ragtriage.spark.session import DEFAULT_MASTER, SparkUnavailable, get_session, pyspark_missing

__all__ = ["DEFAULT_MASTER", "SparkEvaluation", "SparkUnavailable", "evaluate", "get_session", "pyspark_missing"]
