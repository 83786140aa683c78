"""``ragtriage.spark.evaluate``: the measures of the DuckDB engine, run by Spark over qrels and a run of any
size, with the same values.

Nothing here defines a measure, a population rule, a tie rule, the relevance rule, the gain or the
de-duplication: the engine's own query (``metrics.engine.measures_sql``) is rendered for Spark
(``spark.dialect``) and run over temporary views of the names it reads (``labels``, ``qrels``, ``cases``,
``results``; renamed with a unique prefix so a user's tables are never shadowed), built as an evaluation
without a store builds them (``store.load_memory``): the store's grade rule per (query, document), every
judged query a case, the run's rows under run ``run``, stage ``final``.

Order of each list: a run with its own ``rank`` column is read in that order (default mode) and by score in
trec-compat, as a stored run; a run without ranks (TREC text, a table without ``rank``) is ranked as the load
ranks a TREC file (score descending, docno descending: ``contract.trec.trec_rank``), which is trec_eval's order
in both modes. A document repeated in a list counts once, at its first position.

The per-query values stay in Spark (``per_query``); the aggregates are taken on the driver from them
(``result()``: one row per query) by the DuckDB engine's own ``MeasureResult``, so both engines print the same
table, JSON and trec_eval layout.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragtriage.contract.relevance import DEFAULT_MIN_OVERLAP
from ragtriage.contract.trec import trec_rank
from ragtriage.metrics.context import EvalContext, unlabelled_sql
from ragtriage.metrics.engine import measures_sql
from ragtriage.metrics.measure_eval import MeasureResult, measure_result, population_of
from ragtriage.metrics.measures import Measure, parse_measures
from ragtriage.spark.inputs import read_labels, read_run
from ragtriage.store.load import LoadReport
from ragtriage.store.load_memory import RUN_ID
from ragtriage.store.schema import QRELS_LIVE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MEASURES = ("P@10", "R@100", "nDCG@10", "RR", "AP")

_CASES = "SELECT DISTINCT case_id, TRUE AS answerable, CAST(NULL AS VARCHAR) AS split FROM labels"
# per run tag, and once for the whole run (tag NULL, ``whole``): rows, and the topics and rows without labels
_RUN_FACTS = """SELECT r.tag, grouping(r.tag) = 1 AS whole, count(*) AS n,
                       count(DISTINCT r.case_id) FILTER (WHERE c.case_id IS NULL) AS topics,
                       count(*) FILTER (WHERE c.case_id IS NULL) AS ignored_rows
                FROM run_rows r LEFT JOIN cases c ON c.case_id = r.case_id
                GROUP BY GROUPING SETS ((r.tag), ())"""


class _Views:
    """The engine's relation names as temporary views of one evaluation (a unique prefix each)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        prefix = f"ragtriage_{uuid.uuid4().hex[:12]}_"
        self.names = {n: prefix + n for n in ("labels", "qrels", "cases", "results", "run_rows")}

    def put(self, name: str, df: DataFrame) -> None:
        df.createOrReplaceTempView(self.names[name])

    def sql(self, duckdb_sql: str, params: Sequence[object] = ()) -> DataFrame:
        """``duckdb_sql`` (the engine's dialect) run by Spark over these views."""
        from ragtriage.spark.dialect import to_spark  # sqlglot: the spark extra

        return self.spark.sql(to_spark(duckdb_sql, self.names), args=list(params) or None)


@dataclass
class SparkEvaluation:
    """The per-query values as a Spark DataFrame (``per_query``: case_id, then one column per measure named as
    ``ragtriage.evaluate`` names it), and on the driver the DuckDB engine's :class:`MeasureResult`
    (``result()``: aggregates, trec_eval rows, the population header) and ``aggregate`` as a DataFrame."""

    spark: SparkSession
    measures: list[Measure]
    table: DataFrame
    context: EvalContext
    trec_compat: bool
    gain: str
    views: _Views
    load_notes: list[str] = field(default_factory=list)
    _result: MeasureResult | None = None

    @property
    def per_query(self) -> DataFrame:
        values = self.table.drop("_no_relevant", "_in_run")
        return values.toDF("case_id", *(str(m) for m in self.measures))

    def result(self) -> MeasureResult:
        """The aggregates and header, from the per-query values collected once (one row per query)."""
        if self._result is None:
            table = self.table.toArrow()
            (row,) = self.views.sql(*unlabelled_sql(self.context, trec=self.trec_compat)).collect()
            counts = population_of(table, int(row["n"]))
            res = measure_result(
                self.context, self.measures, table, counts, trec_compat=self.trec_compat, gain=self.gain
            )
            res.notes += self.load_notes
            self._result = res
        return self._result

    @property
    def aggregate(self) -> DataFrame:
        """One row per measure (measure, value, n, aggregation, parameters, trec), as ``ragtriage.evaluate``."""
        return self.spark.createDataFrame(self.result().aggregate)


def evaluate(
    spark: SparkSession,
    qrels: Any,
    run: Any,
    measures: Sequence[str | Measure] = DEFAULT_MEASURES,
    *,
    trec_compat: bool = True,
    threshold: int | None = None,
    gain: str = "linear",
    unit: str = "document",
    min_overlap: int = DEFAULT_MIN_OVERLAP,
) -> SparkEvaluation:
    """Evaluate ``run`` against ``qrels`` on Spark, as ``ragtriage.evaluate`` does with DuckDB.

    ``qrels``/``run``: Spark DataFrames (columns named as ir_measures, TREC or this contract name them:
    ``query_id``/``qid``/``case_id``, ``doc_id``/``docno``/``document_id``, ``relevance``/``grade``,
    ``score``, optional ``rank``) or paths (Parquet files or folders, TREC text). ``threshold``: grade >=
    threshold is relevant where a measure leaves ``rel`` out (default 1, trec_eval's ``-l``).
    ``trec_compat``: trec_eval's rules (score order, linear gain); False: the default mode (the run's ranks,
    ``gain`` for nDCG without ``dcg=``). Either way a case without relevant labels scores 0, as in trec_eval and
    every DuckDB entry point (the one population rule, ``EvalContext.population_sql``).
    ``unit="span"``: every docno is a span, ``document:start-end`` (docs/spans.md), graded by the one overlap
    rule at ``min_overlap`` characters, and the span measures (SpanRecall@k, ...) can be asked.
    """
    if unit not in ("document", "span"):
        raise ValueError(f"unit {unit!r}: use document or span")
    gain = "linear" if trec_compat else gain
    threshold = 1 if threshold is None else int(threshold)
    resolved = [m.resolve(threshold, gain) for m in parse_measures(measures)]
    views = _Views(spark)
    views.put("labels", read_labels(spark, qrels))
    views.put("qrels", views.sql(QRELS_LIVE))
    views.put("cases", views.sql(_CASES))
    rows, ranked = read_run(spark, run)
    views.put("run_rows", rows)
    rank = "rank" if ranked else trec_rank("case_id", "score", "unit_id")
    views.put(
        "results",
        views.sql(
            f"SELECT '{RUN_ID}' AS run_id, 'final' AS stage, case_id, unit_id, {rank} AS rank, score FROM run_rows"
        ),
    )
    ctx = EvalContext(RUN_ID, "final", (1,), gain, None, threshold, unit, min_overlap=min_overlap)
    # repeats: a document may appear twice in a list (no load checked it); the engine keeps its first position
    sql, params = measures_sql(resolved, ctx, trec=trec_compat, repeats=True, by_score=trec_compat and ranked)
    table = views.sql(sql, params)
    return SparkEvaluation(spark, resolved, table, ctx, trec_compat, gain, views, _load_notes(views))


def _load_notes(views: _Views) -> list[str]:
    """What a load would say of the run: its topics without labels (ignored, as trec_eval ignores them) and
    several run tags in one file."""
    rows = views.sql(_RUN_FACTS).collect()
    (whole,) = [r for r in rows if r["whole"]]
    report = LoadReport("run", RUN_ID, ignored_topics=int(whole["topics"]), ignored_rows=int(whole["ignored_rows"]))
    report.tags = {str(r["tag"]): int(r["n"]) for r in rows if not r["whole"] and r["tag"] is not None}
    return report.notes()
