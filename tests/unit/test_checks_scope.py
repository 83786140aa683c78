"""Filter scope and the with/without optional-filter pair: a breaking and a passing case for each rule."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ragtriage.checks import check_run, filter_pairs, scope_violations, unchecked_filters
from tests.factory import make_store

EMMA = {"id": "emma", "groups": ["all-staff"], "tenant": "halvorsen"}
DANA = {"id": "dana", "groups": ["kestrel-staff"], "tenant": "kestrel"}


def doc(doc_id: str, **attrs: object) -> dict:
    base = {
        "document_id": doc_id,
        "chunk_id": f"{doc_id}#01",
        "acl": ["all-staff"],
        "tenant": "halvorsen",
        "language": "en",
        "region": "eu",
    }
    return {**base, **attrs}


DOCS = [
    doc("EN-EU"),
    doc("DE-EU", language="de"),
    doc("EN-NOREGION", region=None),
    doc("V2023", effective_from="2023-01-01", effective_to="2023-12-31"),
    doc("V2024", effective_from="2024-01-01"),
    doc("KST", tenant="kestrel", acl=["kestrel-staff"]),
]
CASES = [
    {"id": "lang", "query": "a", "principal": EMMA, "filters": {"language": "EN"}},
    {"id": "langs", "query": "b", "principal": EMMA, "filters": {"language": ["de", "fr"]}},
    {"id": "region", "query": "c", "principal": EMMA, "filters": {"region": "eu"}},
    {"id": "date", "query": "d", "principal": EMMA, "filters": {"effective_on": "2023-12-31"}},
    {"id": "odd", "query": "e", "principal": EMMA, "filters": {"audience": "partners"}},
    # the same query recorded with and without the optional tenant filter
    {"id": "with", "query": "Kestrel  VPN setup", "principal": DANA, "filters": {"tenant": "kestrel"}},
    {"id": "without", "query": "kestrel vpn setup"},
    {"id": "with-ok", "query": "office hours", "principal": EMMA, "filters": {"language": "en"}},
    {"id": "without-ok", "query": "Office hours", "principal": EMMA},
]


def res(case: str, doc_id: str, rank: int, stage: str = "final") -> dict:
    return {"case_id": case, "stage": stage, "rank": rank, "document_id": doc_id, "chunk_id": f"{doc_id}#01"}


RESULTS = [
    res("lang", "EN-EU", 1),
    res("lang", "DE-EU", 2),
    res("langs", "DE-EU", 1),
    res("langs", "EN-EU", 2, "candidate"),
    res("region", "EN-EU", 1),
    res("region", "EN-NOREGION", 2),
    res("date", "V2023", 1),
    res("date", "V2024", 2),
    res("odd", "EN-EU", 1),
    res("with", "KST", 1),
    res("without", "KST", 1),
    res("without", "EN-EU", 2),  # rank 2: another tenant, unseen by dana
    res("with-ok", "EN-EU", 1),
    res("without-ok", "EN-EU", 1),
    res("without-ok", "DE-EU", 2),
]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return make_store(
        tmp_path_factory.mktemp("scope"),
        cases=CASES,
        documents=DOCS,
        labels=[{"case_id": "lang", "document_id": "EN-EU", "chunk_id": "EN-EU#01", "grade": 3}],
        runs=[{"run": {"run_id": "r", "k": 10}, "results": RESULTS}],
    )


def test_results_outside_each_filter(con: duckdb.DuckDBPyConnection) -> None:
    rows = {
        (r["case_id"], r["stage"], r["rank"], r["filter"]): (r["expected"], r["actual"])
        for r in scope_violations(con, "r").to_pylist()
        if r["rule"] == "out-of-scope"
    }
    assert rows == {
        ("lang", "final", 2, "language"): ("EN", "de"),  # case-insensitive: rank 1 'en' passes
        ("langs", "candidate", 2, "language"): ("de|fr", "en"),  # a list means any of these
        ("region", "final", 2, "region"): ("eu", "(none)"),  # a unit without the attribute is out
        ("date", "final", 2, "effective_on"): ("2023-12-31", "effective 2024-01-01 to …"),  # to is inclusive
    }


def test_filter_naming_no_attribute_is_unchecked(con: duckdb.DuckDBPyConnection) -> None:
    assert unchecked_filters(con).to_pylist() == [
        {
            "case_id": "odd",
            "filter": "audience",
            "value": "partners",
            "reason": "no manifest attribute of this name: the filter cannot be checked",
        }
    ]


def test_missing_optional_filter_must_not_broaden_access(con: duckdb.DuckDBPyConnection) -> None:
    pairs = {(p["with_case"], p["without_case"]): p for p in filter_pairs(con, "r").to_pylist()}
    assert set(pairs) == {("with", "without"), ("with-ok", "without-ok")}
    bad, ok = pairs[("with", "without")], pairs[("with-ok", "without-ok")]
    assert (bad["optional_filters"], bad["principal_id"], bad["n_violations"], bad["passed"]) == (
        ["tenant=kestrel"],
        "dana",
        1,
        False,
    )
    assert (ok["optional_filters"], ok["n_violations"], ok["passed"]) == (["language=en"], 0, True)
    broadened = [r for r in scope_violations(con, "r").to_pylist() if r["rule"] == "optional-filter-broadened"]
    assert [(r["case_id"], r["rank"], r["actual"]) for r in broadened] == [
        ("without", 2, "acl-no-overlap, tenant-mismatch")
    ]


def test_broadened_access_fails_the_run_though_the_case_has_no_principal(con: duckdb.DuckDBPyConnection) -> None:
    report = check_run(con, "r")
    assert report.leakage.num_rows == 0  # 'without' has no principal of its own
    assert not report.passed
    assert report.counts()["scope_violations"] == 4 and report.counts()["optional_filter_broadened"] == 1


@pytest.mark.slow
def test_clean_run_passes_scope(tmp_path: Path) -> None:
    con = make_store(
        tmp_path,
        cases=CASES,
        documents=DOCS,
        labels=[{"case_id": "lang", "document_id": "EN-EU", "chunk_id": "EN-EU#01", "grade": 3}],
        runs=[
            {
                "run": {"run_id": "clean", "k": 10},
                "results": [
                    res("lang", "EN-EU", 1),
                    res("date", "V2023", 1),
                    res("without", "KST", 1),
                    res("region", "EN-EU", 1),
                ],
            }
        ],
    )
    assert scope_violations(con, "clean").num_rows == 0
    report = check_run(con, "clean")
    assert report.passed


@pytest.mark.slow
def test_conflicting_filters_pass_only_on_a_controlled_empty_result(tmp_path: Path) -> None:
    conflict = {
        "id": "conflict",
        "query": "z",
        "principal": EMMA,
        "answerable": False,
        "expected_behavior": "empty",
        "filters": {"tenant": "halvorsen", "language": "de", "region": "us"},
    }
    con = make_store(
        tmp_path,
        cases=[*CASES, conflict],
        documents=DOCS,
        labels=[{"case_id": "lang", "document_id": "EN-EU", "chunk_id": "EN-EU#01", "grade": 3}],
        runs=[
            {
                "run": {"run_id": "abstains", "k": 10},
                "results": [res("lang", "EN-EU", 1)],
                "events": [{"case_id": "conflict", "status": "ok", "empty": True}],
            },
            {"run": {"run_id": "answers", "k": 10}, "results": [res("conflict", "DE-EU", 1)]},
        ],
    )
    by_run = {run: check_run(con, run).negatives.to_pylist() for run in ("abstains", "answers")}
    assert [(r["case_id"], r["passed"]) for r in by_run["abstains"]] == [("conflict", True)]
    assert [(r["case_id"], r["passed"], r["reason"]) for r in by_run["answers"]] == [
        ("conflict", False, "returned 1 result(s); expected none")
    ]
    assert [(r["filter"], r["actual"]) for r in scope_violations(con, "answers").to_pylist()] == [("region", "eu")]
