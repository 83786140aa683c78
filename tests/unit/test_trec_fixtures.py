"""The seeded TREC files (tests/trec_fixtures.py) hold every property the trec_eval-compatibility tests rely on:
were one lost, those tests would pass without checking it."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from tests.trec_fixtures import (
    RUN_ONLY,
    TREC_MEASURES,
    Collection,
    Files,
    binary,
    collection,
    per_query,
    read_qrels,
    read_run,
    small,
)

pytest.importorskip("pytrec_eval")


def _trec_order(c: Collection) -> dict[str, list[tuple[str, float]]]:
    """Each topic's (docno, score) by score descending, then docno descending in byte order."""
    out: dict[str, list[tuple[str, float]]] = {}
    for q, d, _, s, _ in c.lines:
        out.setdefault(q, []).append((d, s))
    return {q: sorted(rows, key=lambda r: (-r[1], [-b for b in r[0].encode()])) for q, rows in out.items()}


def test_the_collection_is_seeded_and_shaped_like_a_trec_test_collection() -> None:
    c = collection()
    assert c == collection() and small() == small()
    per_topic = Counter(line[0] for line in c.lines if line[0] in c.qrels)
    assert 10 <= len(c.qrels) <= 50 and min(per_topic.values()) >= 100 and max(per_topic.values()) > 1000
    assert sorted(c.qrels, key=int) != sorted(c.qrels)  # byte order of the ids is not their numeric order
    assert {g for docs in c.qrels.values() for g in docs.values()} == {-1, 0, 1, 2, 3, 4}
    assert {g for docs in small().qrels.values() for g in docs.values()} == {-1, 0, 1, 2, 3, 4}
    no_rel = {q for q, docs in c.qrels.items() if max(docs.values()) < 1}
    assert no_rel == set(c.no_relevant) and max(c.qrels[c.only_grade_1].values()) == 1
    assert RUN_ONLY in per_topic.keys() | {line[0] for line in c.lines} and RUN_ONLY not in c.qrels
    run = c.run()
    assert any(d not in run[q] for q, docs in c.qrels.items() for d in docs)  # judged, not retrieved
    assert any(d not in c.qrels[q] for q, docs in run.items() if q in c.qrels for d in docs)  # retrieved, unjudged


def test_ties_decide_ranks_across_grades_and_docno_byte_order() -> None:
    c = collection()
    ranked = _trec_order(c)
    mixed_top, string_vs_number = 0, 0
    for q, rows in ranked.items():
        grades = c.qrels.get(q, {})
        by_score: dict[float, list[str]] = {}
        for d, s in rows:
            by_score.setdefault(s, []).append(d)
        top = {s for _, s in rows[:10]}
        if any(len({max(grades.get(d, 0), 0) for d in by_score[s]}) > 1 for s in top):
            mixed_top += 1  # a tie in the top 10 between documents of different grades
        for docs in by_score.values():
            numbers = [d for d in docs if d.isdigit()]
            if sorted(numbers) != sorted(numbers, key=int):
                string_vs_number += 1
    assert mixed_top >= len(ranked) // 2 and string_vs_number >= len(ranked)
    # the rank column is no help: it disagrees with trec_eval's order
    file_rank = {(q, d): r for q, d, r, _, _ in c.lines}
    assert any(file_rank[q, rows[0][0]] != 1 for q, rows in ranked.items())
    assert any(d.lower() == d and not d.isdigit() for d, _ in ranked[c.lines[0][0]])  # lower-case docnos too


def test_the_truncated_run_misses_topics_and_has_columns_after_the_tag() -> None:
    c = collection()
    trunc = c.truncated()
    assert {line[0] for line in trunc} == {line[0] for line in c.lines} - set(c.missing)
    assert set(c.missing) & set(c.no_relevant) and set(c.missing) - set(c.no_relevant)
    assert sum(1 for line in trunc if line[4]) > 10 and len(trunc) < len(c.lines)


def test_the_written_files_read_back_and_have_irregular_whitespace(trec_files: Files) -> None:
    c = trec_files.full
    assert read_qrels(trec_files("graded.gz")) == read_qrels(trec_files("graded.txt")) == c.qrels
    assert read_qrels(trec_files("qrels.gz")) == binary(c.qrels)
    assert read_run(trec_files("run.gz")) == read_run(trec_files("run.txt")) == c.run()
    assert read_run(trec_files("trunc.txt")) == read_run(trec_files("trunc.gz"))
    padded = trec_files("small.run").read_text().splitlines()
    assert all(x.count("\t") == 5 for x in padded) and any("\t " in x for x in padded)  # scores padded
    assert "\t-1" in trec_files("small.qrels").read_text() and "\t 1" in trec_files("small.qrels").read_text()
    assert all("  " not in x and "\t" not in x for x in trec_files("run.txt").read_text().splitlines())


@pytest.mark.parametrize(("qrels", "run", "level"), [("qrels", "run", 1), ("qrels", "trunc", 1), ("graded", "run", 2)])
def test_no_summary_value_sits_on_a_rounding_boundary(trec_files: Files, qrels: str, run: str, level: int) -> None:
    """A mean exactly halfway between two printed values could print either way by summation order (a stated
    difference from trec_eval, docs/trec_eval.md): the files are chosen so none is, and the line tests are exact."""
    values = per_query(read_qrels(trec_files(f"{qrels}.gz")), read_run(trec_files(f"{run}.gz")), TREC_MEASURES, level)
    for name in TREC_MEASURES:
        if name.startswith("num_"):
            continue
        mean = math.fsum(v[name] for v in values.values()) / len(values) * 1e4
        assert abs(mean - math.floor(mean) - 0.5) > 1e-9, name
