"""Dataset unit ``span`` (docs/spans.md): evidence spans as labels, each result graded by the spans it overlaps,
and SpanRecall/SpanPrecision/SpanIoU@k. Every figure is derived by hand or by the small interval computation
below, written without the tool; the stores are file stores with the default memory cap, loaded by the loader."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.cli._app import app
from ragtriage.metrics.context import using
from ragtriage.metrics.measure_eval import evaluate_run
from tests.factory import make_store

SPAN_DATASET = {"name": "t", "version": "1", "unit": "span", "relevance_threshold": 1}
TEXT = "x" * 400


def _values(con: Any, run: str, measures: list[str]) -> dict[tuple[str, str], float]:
    rows = evaluate_run(con, run, measures).per_case.to_pylist()
    return {(r["case_id"], r["measure"]): r["value"] for r in rows}


# --- hand-computed -------------------------------------------------------------------------------------------
# q1: evidence d1 [10,20) grade 2 and [40,50) grade 1 (several spans in one document); the list: [0,15) (overlaps
# [10,20) by 5), [12,45) (overlaps the first by 8 and the second by 5: it covers two spans, grade max = 2) and
# [0,10) of d3 (a document without evidence: unlabelled). The first two overlap each other on [12,15).
# q2: evidence d2 [0,5); the list: d2 [5,10), touching the evidence (end exclusive: no overlap, grade 0).
HAND = {
    "cases": [{"id": "q1", "query": "a"}, {"id": "q2", "query": "b"}],
    "labels": [
        {"case_id": "q1", "document_id": "d1", "start": 10, "end": 20, "grade": 2},
        {"case_id": "q1", "document_id": "d1", "start": 40, "end": 50, "grade": 1},
        {"case_id": "q2", "document_id": "d2", "start": 0, "end": 5, "grade": 1},
    ],
    "documents": [{"document_id": d, "text": TEXT} for d in ("d1", "d2", "d3")],
}
HAND_RUN = [
    {"case_id": "q1", "document_id": "d1", "start": 0, "end": 15, "score": 3.0},
    {"case_id": "q1", "document_id": "d1", "start": 12, "end": 45, "score": 2.0},
    {"case_id": "q1", "document_id": "d3", "start": 0, "end": 10, "score": 1.0},
    {"case_id": "q2", "document_id": "d2", "start": 5, "end": 10, "score": 1.0},
]


@pytest.fixture
def hand(tmp_path: Path) -> Any:
    con = make_store(
        tmp_path, dataset=SPAN_DATASET, **HAND, runs=[{"run": {"run_id": "A", "k": 10}, "results": HAND_RUN}]
    )
    yield con
    con.close()


def test_span_measures_and_derived_relevance_by_hand(hand: Any) -> None:
    v = _values(hand, "A", ["SpanRecall@2", "SpanPrecision@2", "SpanIoU@2", "P@2", "P@3", "R@3", "Judged@3"])
    # top 2 of q1: union [0,45) = 45 characters (the overlap [12,15) once); evidence 10 + 10 = 20; shared
    # [10,20) + [40,45) = 15
    assert v["q1", "SpanRecall@2"] == pytest.approx(15 / 20, abs=1e-12)
    assert v["q1", "SpanPrecision@2"] == pytest.approx(15 / 45, abs=1e-12)
    assert v["q1", "SpanIoU@2"] == pytest.approx(15 / (20 + 45 - 15), abs=1e-12)
    assert v["q1", "P@2"] == 1.0 and v["q1", "P@3"] == pytest.approx(2 / 3)
    assert v["q1", "R@3"] == 1.0  # two relevant results / two relevant evidence spans
    assert v["q1", "Judged@3"] == pytest.approx(2 / 3)  # d3 has no evidence for q1: unlabelled
    # q2: [5,10) touches [0,5) and shares nothing
    assert (v["q2", "SpanRecall@2"], v["q2", "SpanPrecision@2"], v["q2", "P@2"]) == (0.0, 0.0, 0.0)
    assert v["q2", "Judged@3"] == 1.0  # graded 0: its document's evidence is marked and it holds none


def test_min_overlap_raises_the_bar_for_derived_relevance(hand: Any) -> None:
    with using(min_overlap=5):  # [0,15) shares exactly 5 with [10,20): still relevant
        assert _values(hand, "A", ["P@2"])["q1", "P@2"] == 1.0
    with using(min_overlap=6):  # [0,15) no longer; [12,45) still shares 8 with the grade-2 span
        six = _values(hand, "A", ["P@2", "nDCG@2", "SpanRecall@2"])
    assert six["q1", "P@2"] == 0.5
    assert six["q1", "SpanRecall@2"] == 0.75  # the span measures count characters, not the overlap rule
    # DCG: grade 0 at 1, grade 2 at 2 -> 2 / log2(3); ideal: the evidence spans 2, 1 -> 2 + 1 / log2(3)
    import math

    assert six["q1", "nDCG@2"] == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)), abs=1e-12)


def test_span_measures_on_another_unit_and_min_overlap_below_one_are_refused(tmp_path: Path, hand: Any) -> None:
    runner = CliRunner()
    db = tmp_path / "store.duckdb"
    hand.close()
    res = runner.invoke(app, ["metrics", "--db", str(db), "--run", "A", "--measure", "P@2", "--min-overlap", "0"])
    assert res.exit_code == 2 and "--min-overlap" in res.output
    (tmp_path / "doc").mkdir()
    doc = make_store(
        tmp_path / "doc",
        dataset={**SPAN_DATASET, "unit": "document"},
        cases=[{"id": "q1", "query": "a"}],
        labels=[{"case_id": "q1", "document_id": "d1", "grade": 1}],
        runs=[{"run": {"run_id": "D", "k": 10}, "results": [{"case_id": "q1", "document_id": "d1", "score": 1.0}]}],
    )
    doc.close()
    ddb = str(tmp_path / "doc" / "store.duckdb")
    res = runner.invoke(app, ["metrics", "--db", ddb, "--run", "D", "--measure", "SpanRecall@10"])
    assert res.exit_code == 2 and "span measures need a dataset of unit span" in res.output
    res = runner.invoke(app, ["metrics", "--db", ddb, "--run", "D", "--measure", "P@1", "--min-overlap", "3"])
    assert res.exit_code == 2 and "--min-overlap is for a dataset of unit span" in res.output


# --- independent computation on two chunkings of one ranking ----------------------------------------------------


def _union(spans: list[tuple[str, int, int]]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for d, s, e in sorted(spans):
        cur = out.setdefault(d, [])
        if cur and s <= cur[-1][1]:
            cur[-1] = (cur[-1][0], max(cur[-1][1], e))
        else:
            cur.append((s, e))
    return out


def _length(u: dict[str, list[tuple[int, int]]]) -> int:
    return sum(e - s for iv in u.values() for s, e in iv)


def _shared(a: dict[str, list[tuple[int, int]]], b: dict[str, list[tuple[int, int]]]) -> int:
    return sum(max(0, min(e1, e2) - max(s1, s2)) for d in a for s1, e1 in a[d] for s2, e2 in b.get(d, []))


def _expected(labels: list[dict[str, Any]], results: list[dict[str, Any]], k: int) -> dict[str, dict[str, float]]:
    out = {}
    for case in sorted({lab["case_id"] for lab in labels}):
        ev = [(x["document_id"], x["start"], x["end"]) for x in labels if x["case_id"] == case and x["grade"] >= 1]
        top = [r for r in results if r["case_id"] == case][:k]
        eu, ru = _union(ev), _union([(r["document_id"], r["start"], r["end"]) for r in top])
        shared, n_ev, n_ret = _shared(ru, eu), _length(eu), _length(ru)
        relevant = sum(
            1
            for r in top
            if any(
                x["case_id"] == case
                and x["document_id"] == r["document_id"]
                and x["grade"] >= 1
                and min(r["end"], x["end"]) - max(r["start"], x["start"]) >= 1
                for x in labels
            )
        )
        out[case] = {
            "SpanRecall@10": shared / n_ev,
            "SpanPrecision@10": shared / n_ret if n_ret else 0.0,
            "SpanIoU@10": shared / (n_ev + n_ret - shared),
            "P@10": relevant / k,
        }
    return out


def _chunked(ranking: list[tuple[str, str, int]], size: int, stride: int) -> list[dict[str, Any]]:
    """One ranking of passages (case, document, a character each passage is about), read through one chunking:
    each passage becomes the chunk of that chunking holding its character (a chunk seen before in the list is
    skipped, as an index returns each chunk once)."""
    out, seen = [], set()
    for case, doc, at in ranking:
        start = max(0, min((at // stride) * stride, len(TEXT) - size))
        key = (case, doc, start)
        if key not in seen:
            seen.add(key)
            n = sum(1 for r in out if r["case_id"] == case)
            out.append({"case_id": case, "document_id": doc, "start": start, "end": start + size, "score": -n})
    return out


def test_two_chunkings_of_one_ranking_match_an_independent_interval_computation(tmp_path: Path) -> None:
    rng = random.Random(51)
    docs, cases = [f"doc{i}" for i in range(4)], [f"q{i}" for i in range(5)]
    labels = []
    for c in cases:
        for d in rng.sample(docs, 2):
            for _ in range(rng.randint(1, 3)):  # several spans per document, possibly overlapping each other
                s = rng.randrange(0, 360)
                labels.append(
                    {
                        "case_id": c,
                        "document_id": d,
                        "start": s,
                        "end": s + rng.randint(5, 40),
                        "grade": rng.randint(0, 3),
                        "annotator": f"a{len(labels)}",
                    }
                )
    ranking = [(c, rng.choice(docs), rng.randrange(0, 400)) for c in cases for _ in range(14)]
    fixed = _chunked(ranking, 50, 50)  # 50-character chunks
    windows = _chunked(ranking, 80, 40)  # 80-character windows overlapping by 40
    con = make_store(
        tmp_path,
        dataset=SPAN_DATASET,
        cases=[{"id": c, "query": c} for c in cases],
        labels=labels,
        documents=[{"document_id": d, "text": TEXT} for d in docs],
        runs=[
            {"run": {"run_id": "fixed50", "k": 10}, "results": fixed},
            {"run": {"run_id": "window80", "k": 10}, "results": windows},
        ],
    )
    names = ["SpanRecall@10", "SpanPrecision@10", "SpanIoU@10", "P@10"]
    for run, results in (("fixed50", fixed), ("window80", windows)):
        got = _values(con, run, names)
        for case, want in _expected(labels, results, 10).items():
            for name, value in want.items():
                assert got[case, name] == pytest.approx(value, abs=1e-9), (run, case, name)
    # the fixed table (cut lists) gives the same derived P@10 as the measure string
    from ragtriage.metrics.per_case import per_case

    table = per_case(con, "window80", [10]).to_pylist()
    assert {r["case_id"]: r["P@10"] for r in table} == pytest.approx(
        {c: w["P@10"] for c, w in _expected(labels, windows, 10).items()}, abs=1e-9
    )
    con.close()
    # the CLI on the same file store, and compare --runs on the two chunkings over the same labels
    runner = CliRunner()
    db = str(tmp_path / "store.duckdb")
    res = runner.invoke(
        app, ["metrics", "--db", db, "--run", "window80", "--measure", "SpanIoU@10", "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    want = sum(w["SpanIoU@10"] for w in _expected(labels, windows, 10).values()) / len(cases)
    assert json.loads(res.output)["rows"][0]["value"] == pytest.approx(want, abs=1e-9)
    res = runner.invoke(
        app,
        [
            "compare",
            "--db",
            db,
            "--runs",
            "window80",
            "--baseline",
            "fixed50",
            "--measure",
            "SpanRecall@10",
            "--measure",
            "P@10",
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "SpanRecall@10" in res.output and "window80" in res.output


def test_case_screen_highlights_the_evidence_inside_each_chunk_as_plain_text(tmp_path: Path) -> None:
    from ragtriage.app.browse.case import RESULTS_SQL
    from ragtriage.tui.case_layout import _marked

    text = "0123456789" + "EVIDENCE\x1b[2J" + "x" * 20
    con = make_store(
        tmp_path,
        dataset=SPAN_DATASET,
        cases=[{"id": "q1", "query": "a"}],
        labels=[{"case_id": "q1", "document_id": "d1", "start": 10, "end": 22, "grade": 2}],
        documents=[{"document_id": "d1", "text": text}],
        runs=[
            {
                "run": {"run_id": "A", "k": 10},
                "results": [{"case_id": "q1", "document_id": "d1", "start": 5, "end": 30, "score": 1.0}],
            }
        ],
    )
    (row,) = con.sql(RESULTS_SQL, params={"run_id": "A", "case_ids": ["q1"]}).to_arrow_table().to_pylist()
    con.close()
    assert (row["unit_id"], row["grade"], row["passage"]) == ("d1:5-30", 2, text[5:30])
    assert row["evidence"] == [{"s": 5, "e": 17}]
    shown = _marked(row["passage"], row["evidence"])
    assert shown.plain == "56789EVIDENCE␛[2Jxxxxxxxx"  # the escape made visible, never interpreted
    (marked,) = [s for s in shown.spans if s.style == "reverse"]
    assert shown.plain[marked.start : marked.end] == "EVIDENCE␛[2J"
