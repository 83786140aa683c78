"""Stale results at the case's effective_on (else the run date), and stale versions ranked above fresh ones."""

from __future__ import annotations

import duckdb
import pytest

from ragtriage.checks import stale_first, stale_results
from ragtriage.checks.staleness import version_pairs
from tests.factory import make_store

DOCS = [
    {
        "document_id": "pol-travel-2023",
        "chunk_id": "pol-travel-2023#01",
        "doc_type": "policy",
        "acl": ["a"],
        "status": "archived",
        "effective_from": "2023-01-01",
        "effective_to": "2023-12-31",
    },
    {
        "document_id": "pol-travel-2024",
        "chunk_id": "pol-travel-2024#01",
        "doc_type": "policy",
        "acl": ["a"],
        "status": "current",
        "effective_from": "2024-01-01",
    },
    {"document_id": "old-memo", "chunk_id": "old-memo#01", "acl": ["a"], "status": "archived"},
    {"document_id": "faq-vpn", "chunk_id": "faq-vpn#01", "acl": ["a"], "status": "current"},
]
CASES = [
    {"id": "now-stale-first", "query": "q"},  # as of the run date
    {"id": "now-fresh-first", "query": "q"},
    {"id": "in-2023", "query": "q", "filters": {"effective_on": "2023-12-31"}},  # the 2023 version is right
    {"id": "memo", "query": "q", "filters": {"effective_on": "2023-05-01"}},  # archived, no dates
]


def res(case: str, doc_id: str, rank: int) -> dict:
    return {"case_id": case, "rank": rank, "document_id": doc_id, "chunk_id": f"{doc_id}#01"}


RESULTS = [
    res("now-stale-first", "pol-travel-2023", 1),
    res("now-stale-first", "pol-travel-2024", 2),
    res("now-fresh-first", "pol-travel-2024", 1),
    res("now-fresh-first", "faq-vpn", 2),
    res("now-fresh-first", "pol-travel-2023", 3),
    res("in-2023", "pol-travel-2023", 1),
    res("in-2023", "pol-travel-2024", 2),
    res("memo", "old-memo", 1),
    res("memo", "faq-vpn", 2),
]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return make_store(
        tmp_path_factory.mktemp("stale"),
        cases=CASES,
        documents=DOCS,
        labels=[{"case_id": "memo", "document_id": "faq-vpn", "chunk_id": "faq-vpn#01", "grade": 2}],
        runs=[{"run": {"run_id": "r", "k": 10, "created_at": "2024-06-01T10:00:00Z"}, "results": RESULTS}],
    )


def test_stale_rows_and_reasons(con: duckdb.DuckDBPyConnection) -> None:
    rows = {(r["case_id"], r["rank"]): (r["reason"], str(r["as_of"])) for r in stale_results(con, "r").to_pylist()}
    assert rows == {
        ("now-stale-first", 1): ("expired", "2024-06-01"),
        ("now-fresh-first", 3): ("expired", "2024-06-01"),
        ("in-2023", 2): ("not-yet-effective", "2023-12-31"),  # effective_to is inclusive: 2023 still in force
        ("memo", 1): ("archived", "2023-05-01"),
    }


def test_stale_first_lists_only_where_the_stale_version_outranks(con: duckdb.DuckDBPyConnection) -> None:
    pairs = {
        r["case_id"]: (r["stale_rank"], r["current_rank"], r["stale_first"])
        for r in version_pairs(con, "r").to_pylist()
    }
    assert pairs == {"now-stale-first": (1, 2, True), "now-fresh-first": (3, 1, False), "in-2023": (2, 1, False)}
    first = stale_first(con, "r").to_pylist()
    assert [(r["case_id"], r["family"], r["stale_document_id"], r["current_document_id"]) for r in first] == [
        ("now-stale-first", "policy|pol-travel", "pol-travel-2023", "pol-travel-2024")
    ]
