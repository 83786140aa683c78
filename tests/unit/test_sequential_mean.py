"""A measure's mean is trec_eval's: the per-query values added one by one in query-id byte order, then divided.

trec_eval's accumulator adds each query's value to a double in the order of its sorted query ids; a pairwise sum
(Arrow's ``mean``, numpy's ``sum``) can differ by an ulp, which prints as another last digit of ``%6.4f`` when a
mean sits on a rounding boundary (seen on a 1M-line run: ``P_20 all`` 0.0599 where trec_eval printed 0.0598)."""

from __future__ import annotations

import functools
import operator

import numpy as np
import pyarrow as pa

from ragtriage.metrics.measure_eval import MeasureResult
from ragtriage.metrics.measures import parse_measures


def _result(case_ids: list[str], values: np.ndarray) -> MeasureResult:
    m = parse_measures(["P@20"])[0]
    wide = pa.table({"case_id": case_ids, str(m): values})
    return MeasureResult(measures=[m], wide=wide, context={}, threshold=1, mode="test")


def test_mean_is_the_left_to_right_sum_in_query_id_order() -> None:
    values = np.random.default_rng(0).integers(0, 21, size=30001) / 20.0
    ids = [f"q{i:05d}" for i in range(values.size)]
    sequential = functools.reduce(operator.add, values.tolist(), 0.0) / values.size
    assert sequential != float(np.sum(values)) / values.size  # the input tells the two sums apart
    # rows given in reverse: the mean still adds them in query-id order
    got = _result(ids[::-1], values[::-1].copy()).aggregate.column("value")[0].as_py()
    assert got == sequential


def test_sum_and_empty_columns() -> None:
    m = parse_measures(["NumRet"])[0]
    wide = pa.table({"case_id": ["b", "a"], str(m): pa.array([3, 4], pa.int64())})
    agg = MeasureResult(measures=[m], wide=wide, context={}, threshold=1, mode="test").aggregate
    assert agg.column("value")[0].as_py() == 7.0
    p20 = parse_measures(["P@20"])[0]
    none = pa.table({"case_id": ["a"], str(p20): pa.array([None], pa.float64())})
    agg = MeasureResult(measures=[p20], wide=none, context={}, threshold=1, mode="test").aggregate
    assert agg.column("value")[0].as_py() is None and agg.column("n")[0].as_py() == 0
