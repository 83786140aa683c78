"""Where each relevant unit is (unit_locations), plus the small corpus and store builder the classifier tests share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.classify import classify_run, unit_locations
from tests.factory import make_store

FILLER_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _doc(chunk: str, text: str, **extra: Any) -> dict[str, Any]:
    doc_id, _, n = chunk.partition("#")
    row = {
        "document_id": doc_id,
        "chunk_id": chunk,
        "section_id": f"{doc_id}/s1",
        "text": text,
        "chunk_kind": "body",
        "tenant": "t1",
        "acl": ["staff"],
        "status": "current",
    }
    row.update(extra)
    return row


POLICY = "Hotel rooms are reimbursed up to a nightly ceiling set by the travel office for every city listed"
DOCUMENTS = [
    _doc("A#1", "Travel booking", chunk_kind="heading"),
    _doc("A#2", "Book trains and flights through the travel portal at least two weeks ahead of departure"),
    _doc("A#3", "city | rate | currency", chunk_kind="table", section_id="A/s2"),
    *[_doc(f"B#{i}", f"Manual page {i} about gateway setup {FILLER_WORDS[i]}") for i in range(1, 7)],
    _doc("C#1", "Salary bands for engineering grades", acl=["hr"]),
    _doc("D#1", "Error E4012 means the device certificate expired"),
    _doc("D#2", "Seen E4012 again after renewing; ticket closed"),
    *[_doc(f"F{i}#1", f"Filler text number {i} on the topic of {FILLER_WORDS[i - 1]}") for i in range(1, 11)],
    _doc(
        "pol-x-2023#1",
        POLICY + " 2023",
        doc_type="policy",
        status="archived",
        effective_from="2023-01-01",
        effective_to="2023-12-31",
    ),
    _doc("pol-x-2024#1", POLICY + " 2024", doc_type="policy", effective_from="2024-01-01"),
]
PRINCIPAL = {"id": "u1", "groups": ["staff"], "tenant": "t1"}


def case(case_id: str, query: str = "a question", **extra: Any) -> dict[str, Any]:
    row = {"id": case_id, "query": query, "principal": PRINCIPAL}
    row.update(extra)
    return row


def label(case_id: str, chunk: str, grade: int, annotator: str = "a") -> dict[str, Any]:
    return {
        "case_id": case_id,
        "document_id": chunk.partition("#")[0],
        "chunk_id": chunk,
        "grade": grade,
        "annotator": annotator,
    }


def results(case_id: str, chunks: list[str], stage: str = "final", score: float | None = None) -> list[dict[str, Any]]:
    return [
        {
            "case_id": case_id,
            "stage": stage,
            "document_id": c.partition("#")[0],
            "chunk_id": c,
            **({"score": score - i * 0.01} if score is not None else {}),
        }
        for i, c in enumerate(chunks)
    ]


def build(
    tmp_path: Path,
    cases: list[dict[str, Any]],
    labels: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    *,
    k: int = 4,
    other: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
    dataset: dict[str, Any] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A store with run ``r`` (cutoff ``k``) and, when ``other`` is given, a second run ``o``."""
    runs = [{"run": {"run_id": "r", "k": k, "created_at": "2024-06-01T10:00:00Z"}, "results": rows, "events": events}]
    if other is not None:
        runs.append({"run": {"run_id": "o", "k": k, "created_at": "2024-06-01T10:00:00Z"}, "results": other})
    return make_store(tmp_path, dataset=dataset, cases=cases, labels=labels, documents=DOCUMENTS, runs=runs)


def classified(con: duckdb.DuckDBPyConnection, **kw: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(case_id, failure) → the classification row, evidence parsed."""
    out = {}
    for r in classify_run(con, "r", store=False, **kw).to_pylist():
        r["evidence"] = json.loads(r["evidence"])
        out[(r["case_id"], r["failure"])] = r
    return out


@pytest.fixture(scope="module")
def located(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    relevant = ("F1#1", "F2#1", "F3#1", "F4#1", "F5#1", "A#9", "C#1")
    labels = [label("c", u, 3) for u in relevant] + [label("c", "F6#1", 1)]
    rows = results("c", ["F7#1", "F1#1", "F8#1", "F9#1", "F2#1"]) + results("c", ["F3#1", "F1#1"], stage="candidate")
    return build(tmp_path_factory.mktemp("loc"), [case("c")], labels, rows, other=results("c", ["F10#1", "F4#1"]))


def test_every_relevant_unit_gets_one_location(located: duckdb.DuckDBPyConnection) -> None:
    rows = {r["unit_id"]: r for r in unit_locations(located, "r").to_pylist()}
    assert {u: r["location"] for u, r in rows.items()} == {
        "F1#1": "final-top-k",  # final rank 2 <= k 4
        "F2#1": "final-below-k",  # final rank 5
        "F3#1": "candidate",  # candidate rank 1 only
        "A#9": "absent-from-corpus",  # not in the snapshot (its document is)
        "F4#1": "other-run",  # run o, rank 2
        "F5#1": "absent-from-runs",
        "C#1": "unpermitted",  # the principal may not see it: never findable, whatever the runs did
    }  # F6#1 is graded 1: not relevant, not listed
    assert (rows["F1#1"]["final_rank"], rows["F1#1"]["candidate_rank"]) == (2, 2)
    assert (rows["F2#1"]["final_rank"], rows["F3#1"]["candidate_rank"]) == (5, 1)
    assert rows["F4#1"]["best_rank_other_runs"] == 2 and rows["F4#1"]["best_other_run"] == "o (final)"
    assert rows["A#9"]["in_corpus"] is False and rows["A#9"]["document_in_corpus"] is True
    assert rows["C#1"]["permitted"] is False and rows["F5#1"]["permitted"] is True
    assert all(r["k"] == 4 for r in rows.values())


def test_locations_follow_k_and_case_filter(located: duckdb.DuckDBPyConnection) -> None:
    at1 = {r["unit_id"]: r["location"] for r in unit_locations(located, "r", "c", k=1).to_pylist()}
    assert at1["F1#1"] == "final-below-k"
    assert unit_locations(located, "r", "nope").num_rows == 0
