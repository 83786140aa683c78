"""Cohen's kappa against hand-computed values and scikit-learn; agreement and disagreements over a store."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from ragtriage.annotate import agreement, confusion_matrix, disagreements, kappa
from tests.factory import make_store

SCALE = (0, 1, 2, 3)


def test_kappa_hand_computed() -> None:
    # pairs (0,0) (1,1) (2,2) (3,2) (3,1): p_o = 3/5; marginals A = 1,1,1,2, B = 1,2,2,0; p_e = 5/25.
    a, b = np.array([0, 1, 2, 3, 3]), np.array([0, 1, 2, 2, 1])
    m = confusion_matrix(a, b, SCALE)
    assert m.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 1, 0]]
    assert kappa(m) == pytest.approx((0.6 - 0.2) / 0.8)
    # quadratic: sum w*O = (1 + 4)/9, sum w*E = 57/45 (sum over r_i c_j (i-j)^2 = 57) -> 1 - 25/57
    assert kappa(m, "quadratic") == pytest.approx(32 / 57)


def test_kappa_perfect_and_undefined() -> None:
    m = confusion_matrix(np.array([0, 3, 2]), np.array([0, 3, 2]), SCALE)
    assert kappa(m) == pytest.approx(1.0)
    assert kappa(m, "quadratic") == pytest.approx(1.0)
    same = confusion_matrix(np.array([2, 2]), np.array([2, 2]), SCALE)
    assert math.isnan(kappa(same))
    assert math.isnan(kappa(np.zeros((4, 4), dtype=np.int64)))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=60))
def test_kappa_matches_sklearn(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    m = confusion_matrix(a, b, SCALE)
    for weights in (None, "quadratic"):
        ours = kappa(m, weights)
        if math.isnan(ours):
            continue  # both raters used one grade: undefined (sklearn divides by zero)
        assert ours == pytest.approx(cohen_kappa_score(a, b, labels=list(SCALE), weights=weights), abs=1e-9)


CASES = [
    {"id": "q1", "query": "alpha", "query_type": "direct"},
    {"id": "q2", "query": "beta", "query_type": "direct"},
    {"id": "q3", "query": "gamma", "query_type": "table"},
]


def _label(case: str, chunk: str, grade: int, who: str) -> dict[str, object]:
    return {"case_id": case, "document_id": chunk.split("#")[0], "chunk_id": chunk, "grade": grade, "annotator": who}


def test_agreement_over_store(tmp_path: Path) -> None:
    labels = [
        _label("q1", "d1#1", 3, "ann"),
        _label("q1", "d1#1", 3, "bob"),  # agree
        _label("q1", "d1#2", 0, "ann"),
        _label("q1", "d1#2", 2, "bob"),  # differ by 2
        _label("q2", "d2#1", 1, "ann"),
        _label("q2", "d2#1", 2, "bob"),  # differ by 1
        _label("q3", "d3#1", 3, "ann"),
        _label("q3", "d3#1", 0, "bob"),  # differ by 3
        _label("q3", "d3#2", 2, "ann"),  # single-labelled: not counted
    ]
    con = make_store(tmp_path, cases=CASES, labels=labels)
    overall, direct, table = agreement(con, "query_type")
    assert (overall.pairs, overall.units) == (4, 4)
    assert overall.raw == pytest.approx(0.25)
    a, b = [3, 0, 1, 3], [3, 2, 2, 0]
    assert overall.kappa == pytest.approx(cohen_kappa_score(a, b, labels=list(SCALE)))
    assert overall.kappa_quadratic == pytest.approx(cohen_kappa_score(a, b, labels=list(SCALE), weights="quadratic"))
    assert overall.confusion[0, 2] == 1 and overall.confusion[3, 0] == 1 and overall.confusion[3, 3] == 1
    assert (direct.slice, direct.pairs, table.slice, table.pairs) == ("direct", 3, "table", 1)
    d = disagreements(con)
    assert d.select(["case_id", "unit_id", "grades"]).to_pylist() == [
        {"case_id": "q3", "unit_id": "d3#1", "grades": "ann=3; bob=0"},
        {"case_id": "q1", "unit_id": "d1#2", "grades": "ann=0; bob=2"},
    ]
    with pytest.raises(ValueError, match="cannot slice"):
        agreement(con, "query; DROP TABLE labels")
