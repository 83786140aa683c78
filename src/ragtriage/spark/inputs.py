"""Qrels and runs as Spark DataFrames of the engine's columns: a DataFrame of ir_measures', TREC's or this
contract's column names (``contract.frames.ALIASES``), or a path Spark reads (Parquet, a folder of Parquet, or
TREC text: ``qid iter docno grade`` and ``qid Q0 docno rank score tag``).

Nothing is collected to the driver. A value that cannot be trusted is refused (``ValueError``, naming the file,
the field and the first such line as written): a NUL byte (``contract.compression``), a TREC line without its
fields, a grade that is not an integer, a score that is not a finite number, a pair judged twice by one
annotator. Spark reads a file in parallel splits, so the line is shown by its text, not its number.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtriage.contract.compression import nul_message
from ragtriage.contract.frames import pick_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: What an input is read as: ``labels(case_id, unit_id, annotator, grade)``, ``run(case_id, unit_id, score, rank,
#: tag)`` (rank NULL when the input has none; tag NULL outside TREC text).
TREC_QRELS_FIELDS = ("case_id", "iteration", "document_id", "grade")
TREC_RUN_FIELDS = ("case_id", "q0", "document_id", "rank", "score", "tag")


def read_labels(spark: SparkSession, source: Any) -> DataFrame:
    """``source`` as ``labels(case_id, unit_id, annotator, grade INT)``; the annotator is ``default`` unless the
    input names one (the store's rule then pools the annotators of a pair). A pair judged twice by one
    annotator is refused, as the load refuses it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df, name, checks = _frame(spark, source, TREC_QRELS_FIELDS)
    case, unit = _need(df, name, "case_id"), _need(df, name, "document_id")
    grade_col = _need(df, name, "grade")
    grade = F.expr(f"try_cast(`{grade_col}` AS DOUBLE)")
    fractional = grade.isNull() | F.isnan(grade) | (grade != F.floor(grade)) | (F.abs(grade) > 2**31 - 1)
    annotator_col = pick_column(df.columns, "annotator")
    annotator = F.col(annotator_col).cast("string") if annotator_col else F.lit("default")
    twice = F.count(F.lit(1)).over(Window.partitionBy(F.col(case), F.col(unit), annotator)) > 1
    checks += [("grade", "not an integer grade", fractional), ("document_id", "duplicate judgement", twice)]
    _refuse(df, name, checks)
    return df.select(
        F.col(case).cast("string").alias("case_id"),
        F.col(unit).cast("string").alias("unit_id"),
        annotator.alias("annotator"),
        grade.cast("int").alias("grade"),
    )


def read_run(spark: SparkSession, source: Any) -> tuple[DataFrame, bool]:
    """``source`` as ``run(case_id, unit_id, score DOUBLE, rank BIGINT, tag)`` and whether it has its own ranks
    (a Parquet or DataFrame ``rank`` column; a TREC file's rank column is not its order, its scores are)."""
    from pyspark.sql import functions as F

    df, name, checks = _frame(spark, source, TREC_RUN_FIELDS)
    trec_text = bool(checks)
    case, unit = _need(df, name, "case_id"), _need(df, name, "document_id")
    score_col = _need(df, name, "score")
    score = F.expr(f"try_cast(`{score_col}` AS DOUBLE)")
    infinite = score.isNull() | F.isnan(score) | (F.abs(score) == float("inf"))
    _refuse(df, name, [*checks, ("score", "not a finite number", infinite)])
    rank_col = None if trec_text else pick_column(df.columns, "rank")
    rank = F.col(rank_col).cast("bigint") if rank_col else F.lit(None).cast("bigint")
    tag = F.col("tag") if trec_text else F.lit(None).cast("string")
    out = df.select(
        F.col(case).cast("string").alias("case_id"),
        F.col(unit).cast("string").alias("unit_id"),
        score.alias("score"),
        rank.alias("rank"),
        tag.alias("tag"),
    )
    return out, rank_col is not None


#: (field, why, condition): a row for which the condition holds is refused
Check = tuple[str, str, "Column"]


def _frame(spark: SparkSession, source: Any, trec_fields: tuple[str, ...]) -> tuple[DataFrame, str, list[Check]]:
    """A DataFrame as given, or a path read as Parquet (a ``.parquet`` file or a folder) or TREC text (with the
    check that every line has its fields)."""
    if not isinstance(source, str | Path):
        return source, f"<{type(source).__name__}>", []
    path = str(source)
    if path.endswith(".parquet") or Path(path).is_dir():
        return spark.read.parquet(path), path, []
    from pyspark.sql import functions as F

    lines = spark.read.text(path).where(F.trim("value") != "")
    parts = F.split(F.trim(F.col("value")), r"\s+")
    fields = [F.get(parts, i).alias(f) for i, f in enumerate(trec_fields)]
    nul = ("text", nul_message(None), F.instr(F.col("value"), "\x00") > 0)
    short = ("fields", f"fewer than {len(trec_fields)} whitespace-separated fields", F.size(parts) < len(trec_fields))
    return lines.select("value", *fields), path, [nul, short]


def _need(df: DataFrame, name: str, field: str) -> str:
    col = pick_column(df.columns, field)
    if col is None:
        raise ValueError(f"{name}: {field}: no such column (found: {', '.join(df.columns)})")
    return col


def _refuse(df: DataFrame, name: str, checks: list[Check]) -> None:
    """Fail closed, in one pass over the input: ``ValueError`` naming the file, the field and the first bad
    line (as written) of the first check some row fails."""
    flags = [cond.alias(f"_bad{i}") for i, (_, _, cond) in enumerate(checks)]
    marked = df.select("*", *flags)
    first = marked.where(" OR ".join(f"_bad{i}" for i in range(len(checks)))).limit(1).collect()
    if not first:
        return
    row = first[0].asDict()
    field, why, _ = next(c for i, c in enumerate(checks) if row[f"_bad{i}"])
    text = row["value"] if "value" in row else " ".join(str(row[c]) for c in df.columns)
    raise ValueError(f"{name}: {field}: {why}, e.g. the line {text!r}; fix or remove such lines")
