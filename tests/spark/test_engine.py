"""The Spark engine equals the DuckDB engine: every measure (the core set at several cutoffs and relevance
thresholds, and every trec_eval family at each of its parameters), per query to 1e-12, in both modes, on a qrels
and run pair built to hit every rule: graded labels (0-3), a negative grade (judged, never relevant), a query
with labels but none relevant, a query absent from the run, a run
topic without labels, tied scores (trec_eval's docno-descending order), a document repeated in a list (its first
position counts) and lists shorter and longer than the cutoffs. trec-compat is also checked against the DuckDB
trec-compat figures (which tests/unit/test_trec_eval_* hold equal to trec_eval) by trec_eval's names, to 1e-9."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragtriage
from ragtriage.metrics.trec_families import FAMILIES, cut_name
from tests.spark.conftest import SPARK_MARKS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS

QRELS = """\
q1 0 d1 3
q1 0 d2 1
q1 0 d3 0
q1 0 d4 2
q1 0 d5 -1
q1 0 d9 1
q2 0 d1 1
q2 0 d7 2
q2 0 d8 0
q3 0 d1 0
q3 0 d2 0
q4 0 d8 2
q5 0 d2 1
q5 0 d3 2
q5 0 d4 1
"""
# q1: ties at 2.0 (d4, d2, d1 in docno-descending order), d3 repeated (its better-scored row counts);
# q2: every result unjudged but the last; q3: no relevant label; q4: not in the run; q6: not in the qrels
RUN = """\
q1 Q0 d3 1 3.0 t
q1 Q0 d1 2 2.0 t
q1 Q0 d2 3 2.0 t
q1 Q0 d4 4 2.0 t
q1 Q0 d3 5 1.5 t
q1 Q0 d5 6 1.0 t
q1 Q0 d6 7 0.5 t
q1 Q0 d9 8 0.5 t
q2 Q0 d11 1 9.0 t
q2 Q0 d12 2 8.0 t
q2 Q0 d13 3 7.0 t
q2 Q0 d7 4 6.0 t
q3 Q0 d1 1 1.0 t
q3 Q0 d9 2 1.0 t
q5 Q0 d4 1 0.9 t
q5 Q0 d9 2 0.8 t
q5 Q0 d3 3 0.7 t
q5 Q0 d2 4 0.6 t
q5 Q0 d1 5 0.5 t
q6 Q0 d1 1 1.0 t
"""

CORE = [
    *(f"{m}@{k}" for m in ("P", "R", "RR", "nDCG", "AP", "Success", "Judged") for k in (1, 3, 5, 10)),
    *(f"{m}(rel=2)@3" for m in ("P", "R", "AP")),
    "nDCG(dcg='exp-log2')@5",
    *("RR", "nDCG", "AP", "Rprec", "Bpref", "NumRet", "NumRel", "NumRelRet", "NumQ", "Rprec(rel=2)", "Bpref(rel=2)"),
]
FAMILY_MEASURES = [
    name for fam in FAMILIES.values() for name in ([cut_name(fam, v) for v in fam.params] if fam.cut else [fam.name])
]
EVERY = [*CORE, *FAMILY_MEASURES]
TREC_NAMES = ["map", "Rprec", "bpref", "recip_rank", "num_rel_ret"] + [
    f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "success") for k in (1, 3, 5, 10)
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("spark-engine")
    (folder / "qrels.txt").write_text(QRELS)
    (folder / "run.txt").write_text(RUN)
    return folder / "qrels.txt", folder / "run.txt"


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=tol)


def _assert_equal(spark_table: pa.Table, duck_table: pa.Table, tol: float) -> int:
    assert spark_table.column_names == duck_table.column_names
    spark_rows, duck_rows = spark_table.to_pylist(), duck_table.to_pylist()
    assert [r["case_id"] for r in spark_rows] == [r["case_id"] for r in duck_rows]
    checked = 0
    for s, d in zip(spark_rows, duck_rows, strict=True):
        for name in spark_table.column_names[1:]:
            assert _close(s[name], d[name], tol), (s["case_id"], name, s[name], d[name])
            checked += 1
    return checked


@pytest.mark.parametrize("trec_compat", [False, True], ids=["default", "trec-compat"])
def test_every_measure_equals_duckdb_per_query(
    spark: SparkSession, files: tuple[Path, Path], trec_compat: bool
) -> None:
    from ragtriage.spark import evaluate

    qrels, run = files
    gain = "linear"
    got = evaluate(spark, str(qrels), str(run), EVERY, trec_compat=trec_compat, gain=gain).result()
    want = ragtriage.evaluate(qrels, run, EVERY, trec_compat=trec_compat, gain=gain)
    assert _assert_equal(got.wide, want.wide, 1e-12) == len(EVERY) * 5  # q1, q2, q3, q4, q5
    assert [r["case_id"] for r in got.wide.to_pylist()] == ["q1", "q2", "q3", "q4", "q5"]
    assert got.context == want.context
    assert got.notes == want.notes  # the population rule and the ignored run topic q6
    for s, d in zip(got.aggregate.to_pylist(), want.aggregate.to_pylist(), strict=True):
        assert s["measure"] == d["measure"] and s["n"] == d["n"] and _close(s["value"], d["value"], 1e-12), s


def test_trec_compat_by_trec_eval_names(spark: SparkSession, files: tuple[Path, Path]) -> None:
    """Also: qrels given as a Spark DataFrame (TREC's column names, read from Parquet), and the per-query and
    aggregate values as Spark DataFrames."""
    from ragtriage.spark import evaluate

    qrels, run = files
    names = ("qid", "iter", "docno", "rel")
    frame = spark.read.parquet(str(_parquet_rows(qrels.parent / "qrels.parquet", QRELS, names)))
    evaluation = evaluate(spark, frame, str(run), TREC_NAMES, trec_compat=True)
    got = evaluation.result().trec_rows(per_query=True)
    want = ragtriage.evaluate(qrels, run, TREC_NAMES, trec_compat=True)
    duck = {(r["case_id"], r["measure"]): r["value"] for r in want.per_query.to_pylist()}
    rows = [r for r in got.to_pylist() if r["case_id"] is not None]
    assert len(rows) == len(TREC_NAMES) * 5
    spelled = {trec: str(m) for m, trec in zip(evaluation.measures, TREC_NAMES, strict=True)}
    for r in rows:
        assert _close(r["value"], duck[(r["case_id"], spelled[r["measure"]])], 1e-9), r
    # hand-derived: q1's list in trec_eval's order is d3 d4 d2 d1 d5 d9 d6 (d3 once); relevant d1 d2 d4 d9
    q1 = {r["measure"]: r["value"] for r in rows if r["case_id"] == "q1"}
    assert q1["recip_rank"] == 0.5 and q1["P_3"] == pytest.approx(2 / 3) and q1["num_rel_ret"] == 4
    assert q1["map"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 4 + 4 / 6) / 4)
    assert evaluation.per_query.columns == ["case_id", *spelled.values()]
    assert evaluation.per_query.count() == 5
    aggregate = {r["measure"]: r["value"] for r in evaluation.aggregate.collect()}
    assert aggregate == {r["measure"]: r["value"] for r in want.aggregate.to_pylist()}


def test_default_mode_reads_the_run_s_own_ranks(spark: SparkSession, tmp_path: Path, files: tuple[Path, Path]) -> None:
    """A Parquet run with a rank column: default mode takes that order (not the scores'), trec-compat the scores'
    order, as a stored run; the DuckDB engine reads the same rows as a pyarrow table."""
    from ragtriage.spark import evaluate

    qrels, _ = files
    rows = [line.split() for line in RUN.splitlines()]
    table = pa.table(
        {
            "query_id": [r[0] for r in rows],
            "doc_id": [r[2] for r in rows],
            # ranks reversed against the scores within each query
            "rank": [sum(1 for o in rows if o[0] == r[0]) - int(r[3]) + 1 for r in rows],
            "score": [float(r[4]) for r in rows],
        }
    )
    pq.write_table(table, tmp_path / "run.parquet")
    measures = ["P@1", "RR", "AP", "nDCG@3", "Bpref"]
    for trec_compat in (False, True):
        got = evaluate(spark, str(qrels), str(tmp_path / "run.parquet"), measures, trec_compat=trec_compat)
        want = ragtriage.evaluate(qrels, table, measures, trec_compat=trec_compat)
        _assert_equal(got.result().wide, want.wide, 1e-12)


def test_untrustworthy_grade_is_refused_with_file_and_field(spark: SparkSession, tmp_path: Path) -> None:
    from ragtriage.spark import evaluate

    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 1.5\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 NaN t\n")
    with pytest.raises(ValueError, match=r"q\.txt: grade: not an integer grade.*'q1 0 d2 1\.5'"):
        evaluate(spark, str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), ["P@1"])
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    with pytest.raises(ValueError, match=r"r\.txt: score: not a finite number"):
        evaluate(spark, str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), ["P@1"])
    # a pair judged twice by one annotator: refused, as `ragtriage load` refuses it
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d1 2\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 1.0 t\n")
    with pytest.raises(ValueError, match="duplicate judgement"):
        evaluate(spark, str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), ["P@1"])
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d\x002 2 1.0 t\n")
    with pytest.raises(ValueError, match="r.txt: text: a NUL byte in the text"):
        evaluate(spark, str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), ["P@1"])
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1\n")
    with pytest.raises(ValueError, match="fewer than 6 whitespace-separated fields"):
        evaluate(spark, str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), ["P@1"])


def _parquet_rows(path: Path, text: str, names: tuple[str, ...]) -> Path:
    rows = [line.split() for line in text.splitlines()]
    pq.write_table(pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)}), path)
    return path
