"""Hand-computed values for every measure, the population rules, document-mode de-duplication and the reports."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragtriage.metrics import (
    MetricsError,
    evaluate_run,
    judged_report,
    latency_report,
    per_case,
    slices,
    stages,
    summarize,
)
from ragtriage.metrics.measures import measures_for_ks
from tests.factory import make_store

L3 = math.log2(3)

CASES = [
    {"id": "a", "query": "qa", "split": "dev", "tags": ["x", "y"], "query_type": "direct"},
    {"id": "b", "query": "qb", "split": "dev", "tags": ["x"], "query_type": "direct"},
    {"id": "c", "query": "qc", "split": "holdout", "query_type": "multi"},
    {"id": "n", "query": "neg", "answerable": False, "expected_behavior": "empty"},
]
LABELS = [
    {"case_id": "a", "document_id": "D1", "chunk_id": "c1", "grade": 3},
    {"case_id": "a", "document_id": "D2", "chunk_id": "c2", "grade": 2},
    {"case_id": "a", "document_id": "D3", "chunk_id": "c3", "grade": 1},
    {"case_id": "b", "document_id": "D1", "chunk_id": "c1", "grade": 0},
    {"case_id": "c", "document_id": "D4", "chunk_id": "c4", "grade": 2},
]
DOCS = [
    {"document_id": "D1", "chunk_id": "c1", "doc_type": "policy", "updated_at": "2024-11-01T00:00:00"},
    {"document_id": "D2", "chunk_id": "c2", "doc_type": "manual", "updated_at": "2024-01-01T00:00:00"},
    {"document_id": "D3", "chunk_id": "c3", "doc_type": "manual", "updated_at": "2024-11-20T00:00:00"},
    {"document_id": "D4", "chunk_id": "c4", "doc_type": "table", "updated_at": "2024-11-30T00:00:00"},
    {"document_id": "D9", "chunk_id": "c9", "doc_type": "faq", "updated_at": "2024-11-30T00:00:00"},
]
# case a, final: c9 (unjudged), c2 (grade 2), c3 (grade 1), c1 (grade 3); b: c1 (grade 0); c: no results
FINAL = [
    {"case_id": "a", "document_id": "D9", "chunk_id": "c9", "score": 0.9},
    {"case_id": "a", "document_id": "D2", "chunk_id": "c2", "score": 0.8},
    {"case_id": "a", "document_id": "D3", "chunk_id": "c3", "score": 0.7},
    {"case_id": "a", "document_id": "D1", "chunk_id": "c1", "score": 0.6},
    {"case_id": "b", "document_id": "D1", "chunk_id": "c1", "score": 0.5},
]
CANDIDATES = [
    {"case_id": "a", "stage": "candidate", "document_id": "D1", "chunk_id": "c1", "score": 0.9},
    {"case_id": "a", "stage": "candidate", "document_id": "D2", "chunk_id": "c2", "score": 0.8},
    {"case_id": "c", "stage": "candidate", "document_id": "D4", "chunk_id": "c4", "score": 0.9},
]
EVENTS = [
    {"case_id": "a", "latency_ms": 10.0, "timed_out": False, "empty": False, "fallback": False, "status": "ok"},
    {"case_id": "b", "latency_ms": 20.0, "timed_out": False, "empty": False, "fallback": True, "status": "ok"},
    {"case_id": "c", "latency_ms": 90.0, "timed_out": True, "empty": True, "fallback": False, "status": "error"},
]


@pytest.fixture
def con(tmp_path: Path):
    run = {"run": {"run_id": "r1", "k": 10, "candidate_k": 2}, "results": FINAL + CANDIDATES, "events": EVENTS}
    return make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, runs=[run])


def rows(table):
    return {r["case_id"]: r for r in table.to_pylist()}


def test_every_measure_of_case_a_by_hand(con) -> None:
    a = rows(per_case(con, "r1", (1, 3, 4)))["a"]
    assert (a["n_relevant"], a["n_retrieved"], a["n_judged_retrieved"]) == (2, 4, 3)
    assert a["P@1"] == 0.0 and a["RR@1"] == 0.0 and a["Success@1"] == 0.0 and a["zero_hit@1"]
    assert a["P@3"] == pytest.approx(1 / 3) and a["R@3"] == pytest.approx(0.5) and a["RR@3"] == pytest.approx(0.5)
    ideal = 3 + 2 / L3 + 1 / 2  # grades 3, 2, 1 sorted, linear gain (trec_eval's, the default)
    assert a["nDCG@3"] == pytest.approx((2 / L3 + 1 / 2) / ideal)
    assert a["nDCG@4"] == pytest.approx((2 / L3 + 1 / 2 + 3 / math.log2(5)) / ideal)
    assert a["AP@3"] == pytest.approx((1 / 2) / 2)
    assert a["AP@4"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert a["Judged@3"] == pytest.approx(2 / 3) and a["Judged@4"] == pytest.approx(3 / 4)
    assert a["R@4"] == 1.0 and a["Success@3"] == 1.0 and not a["zero_hit@3"]


def test_exponential_gain(con) -> None:
    a = rows(per_case(con, "r1", (3,), gain="exponential"))["a"]
    assert a["nDCG@3"] == pytest.approx((3 / L3 + 1 / 2) / (7 + 3 / L3 + 1 / 2))


def test_population_answerable_only_no_results_score_zero_and_no_relevant_scores_zero(con) -> None:
    t = rows(per_case(con, "r1", (3,)))
    assert set(t) == {"a", "b", "c"}  # n is unanswerable
    b, c = t["b"], t["c"]
    # b's only label is grade 0: trec_eval scores it 0 on every measure (no gain either)
    assert b["n_relevant"] == 0 and b["R@3"] == 0.0 and b["nDCG@3"] == 0.0 and b["AP@3"] == 0.0
    # b returned one result, judged: Judged@3 divides by min(3, list length) = 1, as ir_measures does
    assert b["P@3"] == 0.0 and b["Judged@3"] == 1.0
    assert c["n_retrieved"] == 0 and c["P@3"] == 0.0 and c["R@3"] == 0.0 and c["nDCG@3"] == 0.0
    assert set(rows(per_case(con, "r1", (3,), split="holdout"))) == {"c"}


def test_summary_means_zero_hit_and_counts(con) -> None:
    rep = summarize(con, "r1", (3,), seed=1)
    assert (rep.n_cases, rep.n_without_relevant, rep.threshold, rep.gain) == (3, 1, 2, "linear")
    p3 = rep.row("P", 3)
    assert p3.mean == pytest.approx(1 / 9) and p3.n == 3 and p3.median == 0.0 and p3.min == 0.0
    r3 = rep.row("R", 3)
    assert r3.n == 3 and r3.mean == pytest.approx(0.5 / 3)  # a 0.5, b (none relevant) 0, c (no results) 0
    assert 0.0 <= p3.ci_low <= p3.mean <= p3.ci_high <= 1 / 3
    assert rep.zero_hit_rate[3] == pytest.approx(2 / 3)
    assert summarize(con, "r1", (3,), seed=1).rows == rep.rows  # seeded
    t = rep.to_arrow()
    assert {"measure", "k", "threshold", "gain", "mean", "ci_low", "ci_high"} <= set(t.column_names)


def test_document_mode_dedupes_chunks_to_first_occurrence(tmp_path: Path) -> None:
    ds = {"name": "t", "version": "1", "unit": "document", "relevance_threshold": 2}
    labels = [
        {"case_id": "a", "document_id": "D1", "chunk_id": "c1", "grade": 1},
        {"case_id": "a", "document_id": "D1", "chunk_id": "c1b", "grade": 3},  # rolls up to max = 3
        {"case_id": "a", "document_id": "D2", "chunk_id": "c2", "grade": 2},
    ]
    results = [
        {"case_id": "a", "document_id": "D1", "chunk_id": "c1"},
        {"case_id": "a", "document_id": "D1", "chunk_id": "c1b"},
        {"case_id": "a", "document_id": "D1", "chunk_id": "c1c"},
        {"case_id": "a", "document_id": "D2", "chunk_id": "c2"},
    ]
    con = make_store(
        tmp_path,
        dataset=ds,
        cases=[{"id": "a", "query": "q"}],
        labels=labels,
        runs=[{"run": {"run_id": "r", "k": 10}, "results": results}],
    )
    a = per_case(con, "r", (2,)).to_pylist()[0]
    assert a["n_retrieved"] == 2 and a["P@2"] == 1.0 and a["R@2"] == 1.0 and a["nDCG@2"] == pytest.approx(1.0)


def test_deep_duplicates_are_read_past_the_cutoff(tmp_path: Path) -> None:
    """Positions <= k that sit at recorded ranks > k (duplicates before them) still count."""
    ds = {"name": "t", "version": "1", "unit": "document", "relevance_threshold": 1}
    results = [{"case_id": "a", "document_id": "D1", "chunk_id": f"c{i}"} for i in range(5)]
    results.append({"case_id": "a", "document_id": "D2", "chunk_id": "x"})
    con = make_store(
        tmp_path,
        dataset=ds,
        cases=[{"id": "a", "query": "q"}],
        labels=[{"case_id": "a", "document_id": "D2", "chunk_id": "x", "grade": 1}],
        runs=[{"run": {"run_id": "r", "k": 10}, "results": results}],
    )
    a = per_case(con, "r", (2,)).to_pylist()[0]
    assert a["RR@2"] == 0.5 and a["P@2"] == 0.5 and a["n_retrieved"] == 2


def test_slices_by_tags_and_doc_type_worst_first(con) -> None:
    by_tag = {r["slice_value"]: r for r in slices(con, "r1", "tags", (3,), measure="P").to_pylist()}
    assert by_tag["x"]["n"] == 2 and by_tag["x"]["mean"] == pytest.approx(1 / 6)
    assert by_tag["y"]["n"] == 1 and by_tag["(none)"]["n"] == 1
    docs = slices(con, "r1", "doc_type", (3,), measure="R").to_pylist()
    assert [(r["slice_value"], r["n"]) for r in docs] == [("(none)", 1), ("table", 1), ("manual", 1), ("policy", 1)]
    assert docs[1]["mean"] == 0.0 and docs[2]["mean"] == pytest.approx(0.5) and docs[0]["mean"] == 0.0
    age = {r["slice_value"]: r["n"] for r in slices(con, "r1", "update_age", (3,)).to_pylist()}
    assert age == {"<30d": 2, "180-365d": 1, "(none)": 1}  # relevant units of a: 29 and 334 days old
    with pytest.raises(MetricsError):
        slices(con, "r1", "nope")


def test_stages_candidate_recall_against_final(con) -> None:
    rep = stages(con, "r1", (3,))
    assert rep.candidate_k == 2
    t = rows(rep.per_case)
    assert t["a"]["candidate R@2"] == 1.0 and t["a"]["R@3"] == 0.5 and t["a"]["lost_in_rerank"]
    assert t["c"]["candidate R@2"] == 1.0 and t["c"]["R@3"] == 0.0


def test_judged_report_flags_mostly_unjudged(con) -> None:
    t = rows(judged_report(con, "r1", 3))
    assert (t["a"]["returned"], t["a"]["judged"], t["a"]["unjudged"]) == (3, 2, 1)
    assert not t["a"]["mostly_unjudged"] and t["c"]["returned"] == 0 and not t["c"]["mostly_unjudged"]


def test_latency_report(con) -> None:
    r = latency_report(con, "r1").to_pylist()[0]
    assert r["events"] == 3 and r["p50_ms"] == 20.0 and r["p95_ms"] == pytest.approx(83.0) and r["max_ms"] == 90.0
    assert (r["timeouts"], r["empty"], r["fallbacks"], r["errors"], r["cases_without_event"]) == (1, 1, 1, 1, 1)


def test_trec_compat_by_hand(con) -> None:
    t = rows(evaluate_run(con, "r1", measures_for_ks((3,), trec=True), trec_compat=True).trec_wide)
    assert set(t) == {"a", "b", "c"}  # every query with a qrels line
    assert t["a"]["ndcg_cut_3"] == pytest.approx((2 / L3 + 1 / 2) / (3 + 2 / L3 + 1 / 2))
    assert t["b"]["recall_3"] == 0.0 and t["b"]["ndcg_cut_3"] == 0.0 and t["a"]["recip_rank"] == 0.5


def test_bad_arguments(con) -> None:
    for kwargs in ({"stage": "x"}, {"gain": "x"}, {"split": "x"}):
        with pytest.raises(MetricsError):
            per_case(con, "r1", (3,), **kwargs)
    with pytest.raises(MetricsError):
        per_case(con, "r1", (0,))


def test_rank_gap_beyond_the_cutoff_still_counts(tmp_path: Path) -> None:
    """Ranks 1, 2, 3, 50: the de-duplicated list has the rank-50 unit at position 4, inside the top 10."""
    results = [{"case_id": "a", "document_id": f"D{r}", "chunk_id": f"c{r}", "rank": r} for r in (1, 2, 3, 50)]
    con = make_store(
        tmp_path,
        cases=[{"id": "a", "query": "q"}],
        labels=[{"case_id": "a", "document_id": "D50", "chunk_id": "c50", "grade": 3}],
        runs=[{"run": {"run_id": "r", "k": 50}, "results": results}],
    )
    a = rows(per_case(con, "r", (3, 10)))["a"]
    assert (a["P@3"], a["P@10"], a["RR@10"], a["R@10"]) == (0.0, 0.1, 0.25, 1.0)
