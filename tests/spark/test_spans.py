"""The span measures and derived relevance on Spark (``unit="span"``) equal the DuckDB store's per query: the
engine's one SQL, transpiled. Qrels and run in the plain-text form, docno ``document:start-end``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, load_inputs
from tests.spark.conftest import SPARK_MARKS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS

# q1: two spans in d1, a chunk over both and chunks overlapping each other; q2: a chunk touching its evidence
QRELS = "q1 0 d1:10-20 2\nq1 0 d1:40-50 1\nq1 0 d2:0-30 3\nq2 0 d2:0-5 1\n"
RUN = """\
q1 Q0 d1:0-15 1 4.0 t
q1 Q0 d1:12-45 2 3.0 t
q1 Q0 d3:0-10 3 2.0 t
q1 Q0 d2:20-60 4 1.0 t
q2 Q0 d2:5-10 1 1.0 t
"""
MEASURES = ["SpanRecall@2", "SpanPrecision@3", "SpanIoU@10", "P@2", "R@10", "nDCG@10", "AP", "Judged@3"]


def test_span_measures_on_spark_equal_duckdb(spark: SparkSession, tmp_path: Path) -> None:
    from ragtriage.spark import evaluate

    qrels, run = tmp_path / "q.txt", tmp_path / "r.txt"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    con = connect(tmp_path / "s.duckdb")
    load_inputs(con, LoadRequest(qrels=qrels, runs=[run], unit="span", threshold=1))
    want = {(r["case_id"], r["measure"]): r["value"] for r in evaluate_run(con, "t", MEASURES).per_case.to_pylist()}
    con.close()
    for overlap in (1, 6):
        got = evaluate(spark, str(qrels), str(run), MEASURES, trec_compat=False, unit="span", min_overlap=overlap)
        rows = {(r["case_id"], r["measure"]): r["value"] for r in got.result().per_case.to_pylist()}
        if overlap == 1:
            assert rows.keys() == want.keys()
            for key, value in want.items():
                assert rows[key] == pytest.approx(value, abs=1e-12), key
        else:  # [0,15) shares 5 characters with [10,20): below 6 it is not relevant
            assert rows["q1", "P@2"] == 0.5
