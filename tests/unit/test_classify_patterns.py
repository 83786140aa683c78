"""Every failure-pattern hint: one failing case that shows it and one failing case that does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.classify import PATTERNS
from ragtriage.classify.rules import PATTERNS_BY_NAME
from tests.unit.test_classify_locations import build, case, classified, label, results

FILL = ["F5#1", "F6#1", "F7#1", "F8#1"]


def patterns_of(got: dict, case_id: str, failure: str = "no-relevant-in-top-k") -> list[str]:
    return list(got[(case_id, failure)]["patterns"])


def test_every_pattern_has_an_experiment() -> None:
    assert len({p.name for p in PATTERNS}) == len(PATTERNS) == 7
    assert all(p.experiment for p in PATTERNS)


@pytest.mark.slow
def test_heading_only(tmp_path: Path) -> None:
    # c: the heading A#1 of section A/s1 ranks, its body A#2 does not; d: no heading in the top k
    labels = [label("c", "A#2", 3), label("d", "A#2", 3)]
    got = classified(
        build(tmp_path, [case("c"), case("d")], labels, results("c", ["A#1", *FILL[:3]]) + results("d", FILL))
    )
    assert patterns_of(got, "c") == ["heading-only"]
    assert got[("c", "no-relevant-in-top-k")]["evidence"]["facts"]["heading_hits"] == ["A#1"]
    assert patterns_of(got, "d") == []


@pytest.mark.slow
def test_exact_identifier(tmp_path: Path) -> None:
    # c: nothing in the top k contains E4012; d: D#2 (unjudged) contains it
    cases = [case("c", "What does error E4012 mean?"), case("d", "What does error E4012 mean?")]
    labels = [label("c", "D#1", 3), label("d", "D#1", 3)]
    got = classified(build(tmp_path, cases, labels, results("c", FILL) + results("d", ["D#2", *FILL[:3]])))
    c = got[("c", "no-relevant-in-top-k")]
    assert c["patterns"] == ["exact-identifier"]
    assert c["evidence"]["facts"]["identifiers_missed"] == ["E4012"]
    assert PATTERNS_BY_NAME["exact-identifier"].experiment in c["experiments"]
    assert patterns_of(got, "d") == []


@pytest.mark.slow
def test_identifier_tokens_need_letters_and_digits(tmp_path: Path) -> None:
    cases = [case("c", "policy 2024 for BG-200 and RN-2024-117 with 2FA")]
    got = classified(build(tmp_path, cases, [label("c", "F1#1", 3)], results("c", FILL)))
    assert got[("c", "no-relevant-in-top-k")]["evidence"]["facts"]["identifiers_missed"] == ["BG-200", "RN-2024-117"]


def test_table_answer(tmp_path: Path) -> None:
    cases = [case("c"), case("d"), case("e", query_type="table")]
    labels = [label("c", "A#3", 3), label("d", "F1#1", 3), label("e", "F1#1", 3)]
    got = classified(build(tmp_path, cases, labels, results("c", FILL) + results("d", FILL) + results("e", FILL)))
    assert patterns_of(got, "c") == ["table-answer"]  # A#3 is a table chunk
    assert got[("c", "no-relevant-in-top-k")]["evidence"]["facts"]["table_units"] == ["A#3"]
    assert patterns_of(got, "d") == []
    assert patterns_of(got, "e") == ["table-answer"]  # the question asks for a table value


@pytest.mark.slow
def test_current_archived_mixed_and_near_duplicates(tmp_path: Path) -> None:
    # c: both policy versions (near-identical text) in the top k; d: only the current one
    labels = [label("c", "F1#1", 3), label("d", "F1#1", 3)]
    rows = results("c", ["pol-x-2024#1", "pol-x-2023#1", "F5#1", "F6#1"]) + results(
        "d", ["pol-x-2024#1", "F5#1", "F6#1", "F7#1"]
    )
    got = classified(build(tmp_path, [case("c"), case("d")], labels, rows))
    assert patterns_of(got, "c") == ["current-archived-mixed", "near-duplicates"]
    facts = got[("c", "no-relevant-in-top-k")]["evidence"]["facts"]
    assert facts["duplicate_pairs"] == [["pol-x-2024#1", "pol-x-2023#1"]]
    assert len(facts["version_mix"]) == 1
    assert patterns_of(got, "d") == []


def test_near_duplicates_need_a_high_overlap(tmp_path: Path) -> None:
    # the fillers share 7 of 11 distinct tokens pairwise (Jaccard 0.64 < 0.8): similar, not near-duplicates
    got = classified(build(tmp_path, [case("c")], [label("c", "F1#1", 3)], results("c", FILL)))
    assert got[("c", "no-relevant-in-top-k")]["evidence"]["facts"]["duplicate_pairs"] == []


@pytest.mark.slow
def test_multi_part_partial(tmp_path: Path) -> None:
    cases = [case("c", query_type="multi-part"), case("d")]
    labels = [label(c, u, 3) for c in ("c", "d") for u in ("F1#1", "F2#1")]
    rows = results("c", ["F1#1", *FILL[:3]]) + results("d", ["F1#1", *FILL[:3]])
    got = classified(build(tmp_path, cases, labels, rows))
    assert patterns_of(got, "c", "recall-below-bar") == ["multi-part-partial"]
    assert patterns_of(got, "d", "recall-below-bar") == []


@pytest.mark.slow
def test_one_document_dominates(tmp_path: Path) -> None:
    labels = [label("c", "F1#1", 3), label("d", "F1#1", 3), label("e", "B#6", 3)]
    rows = (
        results("c", ["B#1", "B#2", "B#3", "B#4"])
        + results("d", ["B#1", "F5#1", "F6#1", "F7#1"])
        + results("e", ["B#1", "B#2", "B#3", "B#4"])
    )
    got = classified(build(tmp_path, [case("c"), case("d"), case("e")], labels, rows))
    assert patterns_of(got, "c") == ["one-document-dominates"]
    assert patterns_of(got, "d") == []
    assert patterns_of(got, "e") == []  # the crowding document holds the missing evidence itself


def test_stale_first_failure_carries_list_patterns(tmp_path: Path) -> None:
    rows = results("c", ["pol-x-2023#1", "pol-x-2024#1", "F1#1"])
    got = classified(build(tmp_path, [case("c")], [label("c", "F1#1", 3)], rows))
    assert set(got) == {("c", "stale-first")}  # F1#1 is found at rank 3: only the stale-first failure
    assert patterns_of(got, "c", "stale-first") == ["current-archived-mixed", "near-duplicates"]
