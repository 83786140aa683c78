"""The Spark engine in trec-compat mode equals trec_eval per query to 1e-9 on trec_eval's own test files.

trec_eval's expected output files print four decimals, so the reference at 1e-9 is trec_eval's own C code run
through pytrec_eval (a test-only reference) on the same files; the files hold tied scores (results.test),
graded labels (qrels.rel_level, read at threshold 2 as ``trec_eval -l2``) and queries of the qrels missing from
a truncated run (results.trunc, scored 0 as ``trec_eval -c``)."""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.spark.conftest import SPARK_MARKS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS
pytrec_eval = pytest.importorskip("pytrec_eval")

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
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
PYTREC = {"map", "Rprec", "bpref", "recip_rank", "num_rel_ret", "P", "recall", "ndcg_cut", "success"}


def _plain(src: str, dst: Path) -> Path:
    """trec_eval's gzipped test file as a plain one, fields single-spaced (trailing columns kept as they are)."""
    with gzip.open(DATA / src, "rt", encoding="utf-8") as f:
        dst.write_text("".join(" ".join(line.split()) + "\n" for line in f if line.strip()))
    return dst


def _read(path: Path, run: bool) -> dict[str, dict[str, float | int]]:
    out: dict[str, dict[str, float | int]] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if run:
            out.setdefault(f[0], {})[f[2]] = float(f[4])
        else:
            out.setdefault(f[0], {})[f[2]] = int(f[3])
    return out


@pytest.mark.parametrize(
    ("qrels_file", "run_file", "level"),
    [("qrels.test.gz", "results.test.gz", 1), ("qrels.rel_level.gz", "results.test.gz", 2),
     ("qrels.test.gz", "results.trunc.gz", 1)],
    ids=["binary", "graded-l2", "truncated-c"],
)  # fmt: skip
def test_trec_compat_equals_trec_eval_per_query(
    spark: SparkSession, tmp_path: Path, qrels_file: str, run_file: str, level: int
) -> None:
    from ragtriage.spark import evaluate

    qrels = _plain(qrels_file, tmp_path / "qrels.txt")
    run = _plain(run_file, tmp_path / "run.txt")
    qrels_dict = _read(qrels, run=False)
    run_dict = _read(run, run=True)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict, PYTREC, relevance_level=level)
    want = evaluator.evaluate(run_dict)
    got = (
        evaluate(spark, str(qrels), str(run), NAMES, trec_compat=True, threshold=level)
        .result()
        .trec_rows(per_query=True)
    )
    rows = [r for r in got.to_pylist() if r["case_id"] is not None]
    checked = 0
    judged = {q for q, labels in qrels_dict.items() if any(g >= level for g in labels.values())}
    for r in rows:
        case, measure, value = r["case_id"], r["measure"], r["value"]
        assert measure in NAMES, measure
        if case not in want:  # a query of the qrels absent from the run: 0, as trec_eval -c scores it
            assert case in judged and value == 0, r
            continue
        ref = want[case][measure]
        assert math.isclose(value, ref, rel_tol=0.0, abs_tol=1e-9), (case, measure, value, ref)
        checked += 1
    assert checked >= len(NAMES) * len(want.keys() & judged) > 0
    if run_file == "results.trunc.gz":
        assert {r["case_id"] for r in rows} - set(want), "the truncated run misses queries: -c must score them"
