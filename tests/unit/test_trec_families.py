"""trec_eval's all_trec families (metrics/trec_families.py) on a case small enough to derive by hand.

Query q1, relevant at grade >= 1. Qrels: d1=2, d2=0, d3=1, d4=-1 (in the pool, unjudged), d5=1 (never listed).
Run (score order): d1, d6 (no label: not in the pool), d2, d4, d3. So num_ret 5, num_rel 3 (d1, d3, d5),
relevant at positions 1 and 5. Query q2 has one relevant document the run misses (AP 0), for the geometric mean.
"""

from __future__ import annotations

import math

import pytest

import ragtriage

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": 1, "d4": -1, "d5": 1}, "q2": {"d7": 1}}
RUN = {"q1": {"d1": 0.9, "d6": 0.8, "d2": 0.7, "d4": 0.6, "d3": 0.5}, "q2": {"d8": 0.5}}

L3, L5, L6 = math.log2(3), math.log2(5), math.log2(6)
IDCG1, IDCG3 = 2.0, 2.0 + 1 / L3 + 0.5
DCG5 = 2.0 + 1 / L6

HAND = {
    "set_P": 2 / 5,
    "set_recall": 2 / 3,
    "set_map": 4 / 15,
    "set_relative_P": 2 / 3,
    "set_F": 2 * 0.4 * (2 / 3) / (0.4 + 2 / 3),
    "num_nonrel_judged_ret": 1.0,  # d2
    "unj_5": 2 / 5,  # d6 (not in the pool) and d4 (unjudged)
    "unj_10": 2 / 10,  # the list is padded with judged documents past its end
    "relative_P_5": 2 / 3,
    "iprec_at_recall_0.00": 1.0,
    "iprec_at_recall_0.30": 1.0,  # round(0.9) = 1 relevant: best precision from rank 1 on
    "iprec_at_recall_0.50": 2 / 5,  # round(1.5) = 2 relevant: precision at rank 5
    "iprec_at_recall_1.00": 0.0,  # 3 relevant never reached
    "Rprec_mult_0.20": 1.0,  # floor(0.6 + 0.9) = 1
    "Rprec_mult_1.00": 1 / 3,  # floor(3.9) = 3: one relevant in the top 3
    "Rprec_mult_2.00": 2 / 6,  # floor(6.9) = 6 > 5 listed: relevant retrieved / 6
    "binG": (1 / math.log2(2) + 1 / L5) / 3,  # non-relevant above: 0 and 3
    "infAP": (1.0 + (1 / 5 + (4 / 5) * (3 / 4) * ((1 + 1e-5) / (2 + 2e-5)))) / 3,
    "utility": 2 - 3,  # 1 x relevant retrieved - 1 x non-relevant retrieved
    "rbp": 0.1 * (2 / 2 + (1 / 2) * 0.9**4),  # gains scaled by the highest grade (2)
    "rbp_resid": 0.9**5 + 0.1 * (0.9 + 0.9**3),  # unjudged at ranks 2 and 4, plus the tail
    "G": (2 / math.log2(2 + 2 - 2) + 1 / math.log2(2 + 6 - 3)) / 4,  # ideal cost 2, then 2+1+1+1+1
    "ndcg_rel": (2 / IDCG1 + DCG5 / IDCG3 + DCG5 / IDCG3) / 3,  # d1, d3, and d5 never listed
    "Rndcg": (2 / IDCG1 + 2 / IDCG3 + DCG5 / IDCG3) / 3,  # R levels 1 and 3, and the list's end (5 > 3)
    # round(level x 3) relevant: 0 (levels 0, .1) and 1 (.2-.4) -> 1.0; 2 (.5-.8) -> 0.4; 3 (.9, 1) -> 0
    "11pt_avg": (1.0 * 5 + 0.4 * 4 + 0.0 * 2) / 11,
}


@pytest.fixture(scope="module")
def wide() -> dict[str, float]:
    res = ragtriage.evaluate(QRELS, RUN, measures=[*HAND, "relstring", "gm_map", "AP"])
    row = next(r for r in res.wide.to_pylist() if r["case_id"] == "q1")
    return row


@pytest.mark.parametrize("name", list(HAND))
def test_family_equals_hand_derivation(wide: dict[str, float], name: str) -> None:
    assert wide[name] == pytest.approx(HAND[name], abs=1e-12)


def test_relstring_layout(wide: dict[str, object]) -> None:
    # grade 2, not in the pool, grade 0, in the pool but unjudged, grade 1
    assert wide["relstring"] == "2-0.1"


def test_gm_map_floors_a_zero_at_min_geo_mean() -> None:
    res = ragtriage.evaluate(QRELS, RUN, measures=["gm_map", "map"])
    agg = dict(zip(res.aggregate["measure"].to_pylist(), res.aggregate["value"].to_pylist(), strict=True))
    ap_q1 = (1 / 1 + 2 / 5) / 3
    assert agg["AP"] == pytest.approx(ap_q1 / 2)
    assert agg["gm_map"] == pytest.approx(math.sqrt(ap_q1 * 0.00001))


def test_family_names_parse_as_measures() -> None:
    from ragtriage.metrics.measures import parse_measure

    assert str(parse_measure("iprec_at_recall_0.10")) == "iprec_at_recall_0.10"
    assert parse_measure("rbp(0.95)").params == (0.95,)
    assert str(parse_measure("relative_P_5")) == "relative_P_5"
    assert parse_measure("utility").params == (1.0, -1.0, 0.0, 0.0)


def test_recall_level_rounds_in_double_precision() -> None:
    """45 relevant: 0.7 x 45 is 31.499999999999996 in double (trec_eval's lround gives 31), 31.5 exactly (32).
    The first 31 relevant fill ranks 1-31, the 32nd is at rank 37: 31 relevant -> 1.0, 32 -> 32/37."""
    qrels = {"q1": {f"r{i:02d}": 1 for i in range(1, 46)}}
    listed = [f"r{i:02d}" for i in range(1, 32)] + [f"n{i}" for i in range(5)] + ["r32"]
    run = {"q1": {d: 100.0 - k for k, d in enumerate(listed)}}
    res = ragtriage.evaluate(qrels, run, measures=["iprec_at_recall_0.70"])
    assert res.wide["iprec_at_recall_0.70"].to_pylist() == [1.0]


def test_rndcg_list_one_past_the_positive_units_has_no_end_point() -> None:
    """R+ = 1 and two listed (x unjudged, then a): trec_eval's only point is at the drop to gain 0, DCG(1) = 0."""
    res = ragtriage.evaluate({"q1": {"a": 1, "b": 0}}, {"q1": {"x": 2.0, "a": 1.0}}, measures=["Rndcg"])
    assert res.wide["Rndcg"].to_pylist() == [0.0]
