"""The Spark engine in trec-compat mode equals trec_eval per query to 1e-9 on the seeded files of
tests/trec_fixtures.py.

The reference at 1e-9 is trec_eval's own C code run through pytrec_eval (a test-only reference) on the same files;
the files hold tied scores across relevance levels, graded labels -1..4 (read at threshold 2 as ``trec_eval -l2``),
topics without a relevant document, a run topic the qrels lack, and qrels topics missing from a truncated run
(evaluated on an empty list, as ``trec_eval -c`` scores them)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest

from tests.spark.conftest import SPARK_MARKS
from tests.trec_fixtures import Files, per_query, read_qrels, read_run

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS
pytest.importorskip("pytrec_eval")

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
NAMES = [
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    "num_rel_ret",
    *(f"{m}_{k}" for m in ("P", "recall", "ndcg_cut") for k in CUTS),
    *(f"success_{k}" for k in (1, 5, 10)),
]


@pytest.mark.parametrize(
    ("qrels_file", "run_file", "level"),
    [("qrels.txt", "run.txt", 1), ("graded.txt", "run.txt", 2), ("qrels.txt", "trunc.txt", 1)],
    ids=["binary", "graded-l2", "truncated-c"],
)  # fmt: skip
def test_trec_compat_equals_trec_eval_per_query(
    spark: SparkSession, trec_files: Files, qrels_file: str, run_file: str, level: int
) -> None:
    from ragtriage.spark import evaluate

    qrels, run = trec_files(qrels_file), trec_files(run_file)
    qrels_dict, run_dict = read_qrels(qrels), read_run(run)
    want = per_query(qrels_dict, run_dict, NAMES, level)
    got = (
        evaluate(spark, str(qrels), str(run), NAMES, trec_compat=True, threshold=level)
        .result()
        .trec_rows(per_query=True)
    )
    rows = [r for r in got.to_pylist() if r["case_id"] is not None]
    # every qrels topic once per measure (trec_eval -c), none of the run topic the qrels lack
    assert sorted((r["case_id"], r["measure"]) for r in rows) == sorted((q, m) for q in qrels_dict for m in NAMES)
    for r in rows:
        case, measure, value = r["case_id"], r["measure"], r["value"]
        ref = want[case][measure]
        assert math.isclose(value, ref, rel_tol=0.0, abs_tol=1e-9), (case, measure, value, ref)
    absent = qrels_dict.keys() - run_dict.keys()
    assert (run_file == "trunc.txt") == bool(absent), "the truncated run misses qrels topics: -c must score them"
    assert any(want[q]["num_rel_ret"] > 0 for q in qrels_dict)
