"""Every classifier rule: one store where it decides (or matches) and one where it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.classify import RULES
from tests.factory import DEFAULT_DATASET
from tests.unit.test_classify_locations import build, case, classified, label, results

FILL = ["F5#1", "F6#1", "F7#1", "F8#1"]


def test_rule_names_are_unique_and_categorised() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert all(r.name.startswith(r.category + ".") for r in RULES)


def test_no_relevant_label(tmp_path: Path) -> None:
    con = build(
        tmp_path,
        [case("c"), case("d")],
        [label("c", "F1#1", 1), label("d", "F1#1", 2)],
        results("c", FILL) + results("d", [*FILL, "F1#1"]),
    )
    got = classified(con)
    assert got[("c", "no-relevant-in-top-k")]["rule"] == "dataset.no-relevant-label"
    assert got[("c", "no-relevant-in-top-k")]["confidence"] == 0.95
    assert got[("d", "no-relevant-in-top-k")]["rule"] == "ranking.below-k"  # F1#1 at rank 5 > k 4


@pytest.mark.slow
def test_label_not_in_snapshot_versus_absent_from_corpus(tmp_path: Path) -> None:
    # A#9: its document A is in the snapshot (re-chunked: a dataset defect); Z#1: document Z is not (ingestion)
    con = build(
        tmp_path,
        [case("c"), case("d")],
        [label("c", "A#9", 3), label("d", "Z#1", 3)],
        results("c", FILL) + results("d", FILL),
    )
    got = classified(con)
    assert got[("c", "no-relevant-in-top-k")]["rule"] == "dataset.label-not-in-snapshot"
    assert got[("d", "no-relevant-in-top-k")]["rule"] == "ingestion.absent-from-corpus"
    assert got[("d", "no-relevant-in-top-k")]["category"] == "ingestion"
    assert "dataset.label-not-in-snapshot" not in got[("d", "no-relevant-in-top-k")]["evidence"]["rules"]


def test_disputed_grade(tmp_path: Path) -> None:
    # c: F5#1 graded 3 and 0 -> effective grade 1 (not relevant) although it is at rank 1
    # d: F5#1 graded 3 and 2 -> effective 2, relevant and found; F2#1 missing below k
    labels = [
        label("c", "F5#1", 3, "a"),
        label("c", "F5#1", 0, "b"),
        label("c", "F2#1", 3),
        label("d", "F5#1", 3, "a"),
        label("d", "F5#1", 2, "b"),
        label("d", "F2#1", 3),
    ]
    con = build(tmp_path, [case("c"), case("d")], labels, results("c", [*FILL, "F2#1"]) + results("d", [*FILL, "F2#1"]))
    got = classified(con)
    c = got[("c", "no-relevant-in-top-k")]
    assert (c["rule"], c["evidence"]["facts"]["disputed"]) == ("dataset.disputed-grade", ["F5#1"])
    assert "ranking.below-k" in c["evidence"]["rules"]
    d = got[("d", "recall-below-bar")]
    assert d["rule"] == "ranking.below-k" and d["evidence"]["facts"]["disputed"] == []


def test_unpermitted_evidence_versus_absent_from_runs(tmp_path: Path) -> None:
    hr = {"id": "u2", "groups": ["staff", "hr"], "tenant": "t1"}
    con = build(
        tmp_path,
        [case("c"), case("d", principal=hr)],
        [label("c", "C#1", 3), label("d", "C#1", 3)],
        results("c", FILL) + results("d", FILL),
    )
    got = classified(con)
    assert got[("c", "no-relevant-in-top-k")]["rule"] == "dataset.unpermitted-evidence"
    d = got[("d", "no-relevant-in-top-k")]
    # 0.8 x 0.75: the first three results are unjudged, so the run may have found unlabelled evidence
    assert (d["rule"], d["category"], d["confidence"]) == ("ingestion.absent-from-runs", "ingestion", 0.6)


@pytest.mark.slow
def test_absent_from_runs_versus_found_by_other_run(tmp_path: Path) -> None:
    con = build(
        tmp_path,
        [case("c"), case("d")],
        [label("c", "F1#1", 3), label("d", "F2#1", 3)],
        results("c", FILL) + results("d", FILL),
        other=results("d", ["F9#1", "F2#1"]),
    )
    got = classified(con)
    assert got[("c", "no-relevant-in-top-k")]["rule"] == "ingestion.absent-from-runs"
    d = got[("d", "no-relevant-in-top-k")]
    assert d["rule"] == "ranking.found-by-other-run"
    assert d["evidence"]["facts"]["missing"][0]["best_other_run"] == "o (final)"


def test_one_document_crowds_top_k(tmp_path: Path) -> None:
    rows = results("c", ["B#1", "B#2", "B#3", "F5#1", "F1#1"]) + results("d", ["B#1", "B#2", "F5#1", "F6#1", "F1#1"])
    con = build(tmp_path, [case("c"), case("d")], [label("c", "F1#1", 3), label("d", "F1#1", 3)], rows)
    got = classified(con)
    c = got[("c", "no-relevant-in-top-k")]
    assert c["rule"] == "ranking.one-document-crowds-top-k"  # 3 of the top 4 from B (>= 3 and >= k/2)
    assert (c["evidence"]["facts"]["crowding_document"], c["evidence"]["facts"]["crowding_count"]) == ("B", 3)
    assert c["evidence"]["rules"] == ["ranking.one-document-crowds-top-k", "ranking.below-k", "dataset.unjudged-top-k"]
    assert got[("d", "no-relevant-in-top-k")]["rule"] == "ranking.below-k"  # B holds 2 of 4: not crowded


def test_archived_outranks_current(tmp_path: Path) -> None:
    cases = [case("c"), case("d")]
    labels = [label("c", "F1#1", 3), label("d", "F1#1", 3)]
    rows = results("c", ["pol-x-2023#1", "pol-x-2024#1", "F5#1", "F6#1", "F1#1"]) + results(
        "d", ["pol-x-2024#1", "pol-x-2023#1", "F5#1", "F6#1", "F1#1"]
    )
    got = classified(build(tmp_path, cases, labels, rows))
    assert got[("c", "no-relevant-in-top-k")]["rule"] == "ranking.archived-outranks-current"
    stale = got[("c", "stale-first")]
    assert (stale["category"], stale["rule"], stale["confidence"]) == (
        "ranking",
        "ranking.archived-outranks-current",
        0.9,
    )
    assert ("d", "stale-first") not in got
    assert got[("d", "no-relevant-in-top-k")]["rule"] == "ranking.below-k"


def test_below_k_versus_candidate_not_promoted(tmp_path: Path) -> None:
    rows = results("c", [*FILL, "F1#1"]) + results("d", FILL) + results("d", ["F9#1", "F1#1"], stage="candidate")
    got = classified(build(tmp_path, [case("c"), case("d")], [label("c", "F1#1", 3), label("d", "F1#1", 3)], rows))
    assert got[("c", "no-relevant-in-top-k")]["rule"] == "ranking.below-k"
    d = got[("d", "no-relevant-in-top-k")]
    assert d["rule"] == "ranking.candidate-not-promoted"
    assert "ranking.below-k" not in d["evidence"]["rules"]
    assert d["evidence"]["facts"]["missing"][0]["candidate_rank"] == 2


def test_unjudged_top_lowers_confidence(tmp_path: Path) -> None:
    # c: the first three results are unjudged; d: rank 2 carries a grade-0 label
    labels = [label("c", "F1#1", 3), label("d", "F1#1", 3), label("d", "F6#1", 0)]
    rows = results("c", [*FILL, "F1#1"]) + results("d", [*FILL, "F1#1"])
    got = classified(build(tmp_path, [case("c"), case("d")], labels, rows))
    c, d = got[("c", "no-relevant-in-top-k")], got[("d", "no-relevant-in-top-k")]
    assert c["evidence"]["rules"] == ["ranking.below-k", "dataset.unjudged-top-k"]
    assert c["confidence"] == pytest.approx(0.85 * 0.75)
    assert d["evidence"]["rules"] == ["ranking.below-k"] and d["confidence"] == 0.85


@pytest.mark.slow
def test_negative_has_relevant_labels(tmp_path: Path) -> None:
    neg = {"answerable": False, "expected_behavior": "insufficient_evidence"}
    cases = [case("c", **neg), case("d", **neg)]
    got = classified(build(tmp_path, cases, [label("c", "F1#1", 2)], results("c", FILL) + results("d", FILL)))
    assert got[("c", "negative-not-abstained")]["rule"] == "dataset.negative-has-relevant-labels"
    assert got[("d", "negative-not-abstained")]["rule"] == "ranking.negative-answered"


@pytest.mark.slow
def test_negative_confident_scores_needs_a_threshold(tmp_path: Path) -> None:
    neg = {"answerable": False, "expected_behavior": "below_threshold"}
    cases = [case("c", **neg), case("d", **neg)]
    con = build(tmp_path, cases, [label("c", "F9#1", 0)], results("c", FILL, score=0.9) + results("d", FILL, score=0.3))
    got = classified(con)
    c = got[("c", "negative-not-abstained")]
    assert c["rule"] == "ranking.negative-answered"  # no calibrated threshold yet
    assert "calibrate" in c["evidence"]["facts"]["reason"]
    con.execute("UPDATE runs SET score_threshold = 0.5 WHERE run_id = 'r'")
    got = classified(con)
    c = got[("c", "negative-not-abstained")]
    assert (c["rule"], c["confidence"], c["evidence"]["facts"]["top_score"]) == (
        "ranking.negative-confident-scores",
        0.85,
        0.9,
    )
    assert ("d", "negative-not-abstained") not in got  # top score 0.3 < 0.5: abstained as expected


@pytest.mark.slow
def test_negative_not_abstained_fallback(tmp_path: Path) -> None:
    neg = {"answerable": False, "expected_behavior": "insufficient_evidence"}
    cases = [case("c", **neg), case("d", **neg), case("e", **neg)]
    events = [
        {"case_id": "c", "status": "ok"},
        {"case_id": "d", "status": "ok"},
        {"case_id": "e", "status": "insufficient_evidence"},
    ]
    got = classified(build(tmp_path, cases, [label("c", "F9#1", 0)], results("d", FILL), events=events))
    c = got[("c", "negative-not-abstained")]
    assert c["rule"] == "ranking.negative-not-abstained" and c["confidence"] == 0.4
    assert got[("d", "negative-not-abstained")]["evidence"]["rules"] == ["ranking.negative-answered"]
    assert ("e", "negative-not-abstained") not in got


@pytest.mark.slow
def test_leakage_is_security(tmp_path: Path) -> None:
    hr = {"id": "u2", "groups": ["staff", "hr"], "tenant": "t1"}
    labels = [label("c", "F5#1", 3), label("d", "F5#1", 3)]
    rows = results("c", ["F5#1", "C#1"]) + results("d", ["F5#1", "C#1"])
    got = classified(build(tmp_path, [case("c"), case("d", principal=hr)], labels, rows))
    leak = got[("c", "leakage")]
    assert (leak["category"], leak["rule"], leak["confidence"]) == ("security", "security.leaked-result", 1.0)
    assert leak["evidence"]["facts"]["leaks"] == [
        {"stage": "final", "rank": 2, "unit_id": "C#1", "rule": "acl-no-overlap"}
    ]
    assert set(got) == {("c", "leakage")}  # both answered; d may see C#1


def test_never_retrieved_versus_not_indexed(tmp_path: Path) -> None:
    # F1#1 is returned for case x, so it is in the index: c's miss is the retriever's, not ingestion's
    labels = [label("c", "F1#1", 3), label("d", "F2#1", 3), label("x", "F1#1", 3)]
    rows = results("c", FILL) + results("d", FILL) + results("x", ["F1#1"])
    got = classified(build(tmp_path, [case("c"), case("d"), case("x")], labels, rows))
    c = got[("c", "no-relevant-in-top-k")]
    assert (c["rule"], c["category"]) == ("ranking.never-retrieved", "ranking")
    assert c["evidence"]["facts"]["missing"][0]["indexed"] is True
    assert got[("d", "no-relevant-in-top-k")]["rule"] == "ingestion.absent-from-runs"


def test_label_defect_decides_only_when_nothing_findable_was_missed(tmp_path: Path) -> None:
    # c misses a stale label (A#9) and a findable unit below k; d misses only the stale label
    labels = [label("c", "A#9", 3), label("c", "F1#1", 3), label("d", "A#9", 3), label("d", "F2#1", 3)]
    rows = results("c", [*FILL, "F1#1"]) + results("d", ["F2#1", *FILL[:3]])
    got = classified(build(tmp_path, [case("c"), case("d")], labels, rows))
    c = got[("c", "no-relevant-in-top-k")]
    assert c["rule"] == "ranking.below-k" and "dataset.label-not-in-snapshot" not in c["evidence"]["rules"]
    assert got[("d", "recall-below-bar")]["rule"] == "dataset.label-not-in-snapshot"


def test_docs_name_every_rule_and_pattern_in_order() -> None:
    from ragtriage.classify import PATTERNS

    text = (Path(__file__).parents[2] / "docs" / "classifier.md").read_text(encoding="utf-8")
    positions = [text.index(f"| `{r.name}` |") for r in RULES]
    assert positions == sorted(positions)
    assert all(f"`{p.name}`" in text and p.experiment in text for p in PATTERNS)


def test_judged_and_labelled_with_a_negative_grade(tmp_path: Path) -> None:
    """A grade -1 label is labelled but not judged (``contract.relevance``): the classifier's ``n_judged`` and its
    unjudged-top rule count judged units (grade >= 0, as the evidence says); Judged@k counts labelled ones
    (ir_measures), as does the judged report; Bpref skips it (trec_eval's "unjudged in pool")."""
    from ragtriage.metrics import judged_report
    from ragtriage.metrics.measure_eval import evaluate_run

    # e: F6#1 (rank 2) is in the pool at grade -1; f: F6#1 carries a grade-0 label. F1#1 (rank 5) is relevant.
    labels = [label("e", "F1#1", 3), label("e", "F6#1", -1), label("f", "F1#1", 3), label("f", "F6#1", 0)]
    rows = results("e", [*FILL, "F1#1"]) + results("f", [*FILL, "F1#1"])
    scale = {"min": -1, "max": 3}
    con = build(tmp_path, [case("e"), case("f")], labels, rows, dataset={**DEFAULT_DATASET, "grade_scale": scale})
    got = classified(con)
    e, f = got[("e", "no-relevant-in-top-k")], got[("f", "no-relevant-in-top-k")]
    assert e["evidence"]["judged"] == f["evidence"]["judged"] == "grade >= 0"
    # hand-derived: top 4 = F5 F6 F7 F8; judged there: none for e, F6 (grade 0) for f
    assert e["evidence"]["facts"]["n_judged"] == 0 and f["evidence"]["facts"]["n_judged"] == 1
    assert "dataset.unjudged-top-k" in e["evidence"]["rules"]
    assert "dataset.unjudged-top-k" not in f["evidence"]["rules"]
    # Judged@4: labelled results in the top 4 / 4 = 1/4 for both (the grade -1 unit is labelled)
    wide = {r["case_id"]: r for r in evaluate_run(con, "r", ["Judged@4", "Bpref"]).wide.to_pylist()}
    assert wide["e"]["Judged@4"] == wide["f"]["Judged@4"] == pytest.approx(0.25)
    # Bpref: R = 1 relevant, N = judged non-relevant: e has none (grade -1 skipped), f has F6 ranked above F1:
    # e: 1 - 0/min(1, 0)... = 1.0 (no judged non-relevant above it); f: 1 - min(1, 1)/min(1, 1) = 0.0
    assert wide["e"]["Bpref"] == pytest.approx(1.0) and wide["f"]["Bpref"] == pytest.approx(0.0)
    report = {r["case_id"]: r for r in judged_report(con, "r", 4).to_pylist()}
    assert report["e"]["judged"] == report["f"]["judged"] == 1
