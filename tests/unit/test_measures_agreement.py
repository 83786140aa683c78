"""Measures by name against the references: trec_eval (pytrec_eval-terrier) per query and in the ``all`` line,
ir_measures for spelled-out ir_measures names, and the default mode's own ``per_case`` for the shared measures.

Seeded random stores with score ties, repeated units, queries missing from the run, queries without relevant
labels and unlabelled queries (tests/unit/test_metrics_agreement.py builds them).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtriage.metrics import per_case
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.metrics.measures import measures_for_ks
from tests.unit.test_metrics_agreement import THRESHOLD, _distinct_run, _qrels, _store, _trec_run

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 5, 10)
TREC = {"map", "Rprec", "bpref", "recip_rank", "num_q", "num_ret", "num_rel", "num_rel_ret", "ndcg"}
TREC |= {f"{m}.{','.join(map(str, KS))}" for m in ("P", "recall", "ndcg_cut", "map_cut", "success")}
SUMMED = {"num_q", "num_ret", "num_rel", "num_rel_ret"}


def _first_occurrence_run(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for row in sorted(results, key=lambda r: r["rank"]):
        run.setdefault(row["case_id"], {}).setdefault(row["chunk_id"], row["score"])
    return run


def _reference(qrels: dict[str, dict[str, int]], qid: str, ref: dict[str, dict[str, float]], name: str) -> float:
    """pytrec_eval's value, with trec_eval -c's for a query missing from the run (only num_rel/num_q non-zero)."""
    if qid in ref:
        return ref[qid][name]
    return {"num_q": 1.0, "num_rel": float(sum(g >= THRESHOLD for g in qrels[qid].values()))}.get(name, 0.0)


@pytest.mark.parametrize(("seed", "distinct"), [(0, False), (1, False), (4, True), (5, True)])
def test_trec_measures_equal_trec_eval(tmp_path: Path, seed: int, distinct: bool) -> None:
    con, labels, results = _store(tmp_path, seed, lambda rng, n: _trec_run(rng, n, distinct))
    qrels = _qrels(labels)
    ref = pytrec_eval.RelevanceEvaluator(qrels, TREC, relevance_level=THRESHOLD).evaluate(
        _first_occurrence_run(results)
    )
    measures = [*measures_for_ks(KS, trec=True), "ndcg"]
    res = evaluate_run(con, "r", measures, trec_compat=True, gain="linear")
    wide = {r["case_id"]: r for r in res.wide.to_pylist()}
    assert set(wide) == set(qrels)
    assert res.context["absent from run (score 0)"] > 0 and res.context["without relevant label"] > 0
    assert res.context["excluded, no labels"] > 0
    for agg in res.aggregate.to_pylist():
        name = agg["trec"]
        values = [_reference(qrels, q, ref, name) for q in sorted(qrels)]
        for q, expected in zip(sorted(qrels), values, strict=True):
            assert wide[q][agg["measure"]] == pytest.approx(expected, abs=1e-9), (q, name)
        total = np.sum(values) if name in SUMMED else np.mean(values)
        assert agg["value"] == pytest.approx(total, abs=1e-9), name


def _judged_qrels(labels: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    return {q: g for q, g in _qrels(labels).items() if max(g.values()) >= THRESHOLD}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_default_mode_equals_per_case(tmp_path: Path, seed: int) -> None:
    """The measures computation and ``per_case`` share definitions: same figures on cases with relevant labels."""
    con, labels, _ = _store(tmp_path, seed, lambda rng, n: _trec_run(rng, n, False))
    names = [f"{m}@{k}" for m in ("P", "R", "RR", "nDCG", "AP", "Success") for k in KS]
    res = evaluate_run(con, "r", names)
    ours = {r["case_id"]: r for r in res.wide.to_pylist()}
    theirs = {r["case_id"]: r for r in per_case(con, "r", KS).to_pylist()}
    judged = _judged_qrels(labels)
    assert len(judged) > 20
    for q in judged:
        for name in names:
            assert ours[q][name] == pytest.approx(theirs[q][name], abs=1e-12), (q, name)
    # no labels at all: excluded; labelled, none relevant: scored as trec_eval scores them (0 but nDCG's gains)
    assert set(ours) == set(_qrels(labels))
    none_relevant = set(_qrels(labels)) - set(judged)
    assert none_relevant and all(ours[q]["R@5"] == 0.0 and ours[q]["P@5"] == 0.0 for q in none_relevant)
    for q in none_relevant:
        for name in names:
            assert ours[q][name] == pytest.approx(theirs[q][name], abs=1e-12), (q, name)


IR_MEASURES = [
    "nDCG@10",
    "nDCG",
    f"P(rel={THRESHOLD})@5",
    f"R(rel={THRESHOLD})@10",
    f"RR(rel={THRESHOLD})@10",
    f"RR(rel={THRESHOLD})",
    f"AP(rel={THRESHOLD})",
    f"AP(rel={THRESHOLD})@10",
    f"Rprec(rel={THRESHOLD})",
    f"Bpref(rel={THRESHOLD})",
    "Judged@10",
    "Judged@30",
    f"Success(rel={THRESHOLD})@3",
    "NumRet",
    "NumRel(rel=1)",
    f"NumRet(rel={THRESHOLD})",
    "NumQ",
]


@pytest.mark.parametrize("seed", [0, 1])
def test_spelled_out_names_equal_ir_measures(tmp_path: Path, seed: int) -> None:
    """ir_measures evaluates the queries of the run that have qrels, so every case is in this run; its rank is
    its score order without ties. ``nDCG@10`` leaves ``dcg`` out: ragtriage fills it from ``gain``, given here
    as ir_measures' default (linear, ``log2``)."""
    ir_measures = pytest.importorskip("ir_measures")
    rng = random.Random(seed)
    con, labels, results = _store(tmp_path, seed, lambda _, n: _distinct_run(rng, n))
    qrels = _qrels(labels)
    run = _first_occurrence_run(results)
    ref_measures = [ir_measures.parse_measure(m) for m in IR_MEASURES]
    per_query = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(ref_measures, qrels, run)}
    aggregate = {str(k): v for k, v in ir_measures.calc_aggregate(ref_measures, qrels, run).items()}
    res = evaluate_run(con, "r", IR_MEASURES, trec_compat=True, gain="linear")
    wide = {r["case_id"]: r for r in res.wide.to_pylist()}
    rows = {r["measure"]: r for r in res.aggregate.to_pylist()}
    assert len(rows) == len(IR_MEASURES)
    for name, ref in zip(IR_MEASURES, ref_measures, strict=True):
        column = _column(res, name)
        for q in qrels:
            assert wide[q][column] == pytest.approx(per_query.get((str(ref), q), 0.0), abs=1e-9), (q, name)
        assert rows[column]["value"] == pytest.approx(aggregate[str(ref)], abs=1e-9), name


def _column(res: Any, name: str) -> str:
    """The output column of the measure asked as ``name`` (the parser's canonical spelling)."""
    from ragtriage.metrics.measures import parse_measure

    asked = parse_measure(name)
    for m in res.measures:
        same = (m.name, m.cutoff) == (asked.name, asked.cutoff) and asked.rel in (None, m.rel)
        if same and asked.dcg in (None, m.dcg):
            return str(m)
    raise KeyError(name)
