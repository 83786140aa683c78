"""Agreement with the reference implementations on seeded random data.

``--trec-compat`` must equal trec_eval (pytrec_eval-terrier) to 1e-9, on runs with score ties, duplicated units,
queries missing from the run, queries without relevant labels and unlabelled queries. The default mode must
equal trec_eval where the two define a measure the same way (recorded rank = score order, no duplicates, cases
with at least one relevant label; exponential gain through grades mapped to 2^g - 1). ranx defines the same
measures but compiles numba code for about 100 s in a fresh environment, so it stays a bench/ reference.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragtriage.metrics import evaluate_run, per_case
from ragtriage.metrics.measures import measures_for_ks
from tests.factory import make_store

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10)
THRESHOLD = 2


def _dataset(rng: random.Random, n_cases: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cases = [{"id": f"q{i:03d}", "query": f"query {i}"} for i in range(n_cases)]
    labels = []
    for i in range(n_cases):
        if i % 7 == 3:
            continue  # unlabelled
        for u in rng.sample(range(40), rng.randint(1, 8)):
            grade = 1 if i % 5 == 4 else rng.randint(0, 3)  # i % 5 == 4: no relevant label at threshold 2
            labels.append({"case_id": f"q{i:03d}", "document_id": f"d{u:02d}", "chunk_id": f"d{u:02d}", "grade": grade})
    return cases, labels


def _trec_run(rng: random.Random, n_cases: int, distinct: bool = False) -> list[dict[str, Any]]:
    """Scores with ties (rounded to 1 decimal), ranks shuffled against the scores, repeated units unless
    ``distinct`` (then the run is flagged as repeat-free and skips de-duplication)."""
    rows = []
    for i in range(n_cases):
        if i % 6 == 1:
            continue  # missing from the run
        n = rng.randint(1, 25)
        units = rng.sample(range(40), n) if distinct else [rng.randrange(40) for _ in range(n)]
        ranks = list(range(1, len(units) + 1))
        rng.shuffle(ranks)
        for u, r in zip(units, ranks, strict=True):
            rows.append(
                {
                    "case_id": f"q{i:03d}",
                    "document_id": f"d{u:02d}",
                    "chunk_id": f"d{u:02d}",
                    "rank": r,
                    "score": round(rng.random(), 1),
                }
            )
    return rows


def _store(tmp_path: Path, seed: int, results_fn):
    rng = random.Random(seed)
    cases, labels = _dataset(rng, 60)
    results = results_fn(rng, 60)
    con = make_store(
        tmp_path,
        dataset={"name": "t", "version": "1", "unit": "chunk", "relevance_threshold": THRESHOLD},
        cases=cases,
        labels=labels,
        runs=[{"run": {"run_id": "r", "k": 25}, "results": results}],
    )
    return con, labels, results


def _qrels(labels):
    q: dict[str, dict[str, int]] = {}
    for lab in labels:
        q.setdefault(lab["case_id"], {})[lab["chunk_id"]] = lab["grade"]
    return q


@pytest.mark.parametrize(("seed", "distinct"), [(0, False), (1, False), (2, False), (3, False), (4, True), (5, True)])
def test_trec_compat_equals_trec_eval(tmp_path: Path, seed: int, distinct: bool) -> None:
    con, labels, results = _store(tmp_path, seed, lambda rng, n: _trec_run(rng, n, distinct))
    assert con.execute("SELECT has_repeats FROM runs WHERE run_id = 'r'").fetchall() == [(not distinct,)]
    qrels = _qrels(labels)
    run: dict[str, dict[str, float]] = {}
    for row in sorted(results, key=lambda r: r["rank"]):  # first occurrence (lowest rank) keeps its score
        run.setdefault(row["case_id"], {}).setdefault(row["chunk_id"], row["score"])
    names = {f"P_{k}" for k in KS} | {f"recall_{k}" for k in KS} | {f"ndcg_cut_{k}" for k in KS}
    names |= {f"map_cut_{k}" for k in KS} | {"recip_rank"}
    measures = {"P", "recall", "ndcg_cut", "map_cut", "recip_rank"}
    measures = {f"{m}.{','.join(map(str, KS))}" if m != "recip_rank" else m for m in measures}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=THRESHOLD).evaluate(run)
    res = evaluate_run(con, "r", measures_for_ks(KS, trec=True), trec_compat=True)
    ours = {r["case_id"]: r for r in res.trec_wide.to_pylist()}
    assert set(ours) == set(qrels)
    for qid, row in ours.items():
        for name in names:
            expected = ref.get(qid, {}).get(name, 0.0)  # -c: a query missing from the run scores 0
            assert row[name] == pytest.approx(expected, abs=1e-9), (qid, name)
    summary = {r["measure"]: r["value"] for r in res.trec_rows(per_query=False).to_pylist()}
    for name in names:
        mean = np.mean([ref.get(q, {}).get(name, 0.0) for q in qrels])
        assert summary[name] == pytest.approx(mean, abs=1e-9)


def _distinct_run(rng: random.Random, n_cases: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n_cases):
        units = rng.sample(range(40), rng.randint(1, 15))
        for r, u in enumerate(units, start=1):
            rows.append(
                {
                    "case_id": f"q{i:03d}",
                    "document_id": f"d{u:02d}",
                    "chunk_id": f"d{u:02d}",
                    "rank": r,
                    "score": 1.0 / r,
                }
            )
    return rows


@pytest.mark.parametrize("seed", [0, 1])
def test_default_mode_equals_trec_eval_with_exponential_gain(tmp_path: Path, seed: int) -> None:
    """trec_eval's ndcg_cut takes the qrels grade as the gain, so grades mapped to 2^g - 1 give nDCG with
    exponential gain (ranx's ndcg_burges) with no JIT compile; RR@k is recip_rank over the top k."""
    con, labels, results = _store(tmp_path, seed, _distinct_run)
    table = {r["case_id"]: r for r in per_case(con, "r", KS, gain="exponential").to_pylist()}
    judged = {q: g for q, g in _qrels(labels).items() if max(g.values()) >= THRESHOLD}
    exponential = {q: {u: 2**g - 1 for u, g in grades.items()} for q, grades in judged.items()}
    level = 2**THRESHOLD - 1  # the threshold on the mapped scale
    ids = sorted(judged)
    assert len(ids) > 20
    for k in KS:
        run: dict[str, dict[str, float]] = {}
        for row in results:
            if row["case_id"] in judged and row["rank"] <= k:
                run.setdefault(row["case_id"], {})[row["chunk_id"]] = row["score"]
        measures = {f"ndcg_cut.{k}", f"P.{k}", f"recall.{k}", "recip_rank"}
        ref = pytrec_eval.RelevanceEvaluator(exponential, measures, relevance_level=level).evaluate(run)
        pairs = {f"ndcg_cut_{k}": "nDCG", f"P_{k}": "P", f"recall_{k}": "R", "recip_rank": "RR"}
        for qid in ids:
            for name, ours in pairs.items():
                assert table[qid][f"{ours}@{k}"] == pytest.approx(ref[qid][name], abs=1e-9), (qid, name, k)
