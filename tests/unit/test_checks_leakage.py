"""Leakage: each rule with a row that breaks it and one that does not, in any stage, in rows and in snippets."""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragtriage.checks import check_run, leakage, unchecked_cases, unverifiable_results
from ragtriage.store import StoreError
from tests.factory import make_store

HR_TEXT = "salary bands for grade seven engineers range from sixty to eighty thousand euros before the bonus review"
BOILER = "this page is maintained by the people team and reviewed every quarter for accuracy and completeness"

EMMA = {"id": "emma", "groups": ["all-staff"], "tenant": "halvorsen"}
SAM = {"id": "sam", "groups": ["all-staff", "support"], "tenant": "halvorsen"}
DANA = {"id": "dana", "groups": ["kestrel-staff"], "tenant": "kestrel"}


def doc(doc_id: str, acl: list[str] | None, tenant: str = "halvorsen", text: str = "plain text") -> dict:
    row = {"document_id": doc_id, "chunk_id": f"{doc_id}#01", "tenant": tenant, "text": text}
    if acl is not None:
        row["acl"] = acl
    return row


DOCS = [
    doc("HAL-POL-1", ["all-staff"], text="travel must be booked through traveldesk in advance " + BOILER),
    doc("HAL-HR-9", ["hr"], text=HR_TEXT + " " + BOILER),
    doc("HAL-ENG-3", ["eng", "support"]),
    doc("HAL-FAQ-2", ["all-staff"]),
    doc("KST-POL-1", ["kestrel-staff"], tenant="kestrel"),
    doc("KST-FAQ-1", ["all-staff"], tenant="kestrel"),
    doc("HAL-OPEN", None),
]
CASES = [
    {"id": "multi", "query": "q", "principal": SAM},
    {"id": "no-group", "query": "q", "principal": EMMA},
    {"id": "tenant", "query": "q", "principal": DANA},
    {"id": "tenant-only", "query": "q", "principal": EMMA},
    {"id": "candidate", "query": "q", "principal": EMMA},
    {"id": "snippet", "query": "q", "principal": EMMA},
    {"id": "metadata", "query": "q", "principal": EMMA},
    {"id": "open", "query": "q", "principal": EMMA},
    {"id": "nobody", "query": "q"},
]


def res(case: str, doc_id: str, rank: int, stage: str = "final", **extra: object) -> dict:
    return {"case_id": case, "stage": stage, "rank": rank, "document_id": doc_id, "chunk_id": f"{doc_id}#01", **extra}


RESULTS = [
    res("multi", "HAL-POL-1", 1),
    res("multi", "HAL-ENG-3", 2),  # 'support' overlaps: fine
    res("no-group", "HAL-ENG-3", 1),  # acl-no-overlap
    res("tenant", "KST-POL-1", 1),
    res("tenant", "HAL-POL-1", 2),  # 2: tenant + acl
    res("tenant-only", "HAL-FAQ-2", 1),
    res("tenant-only", "KST-FAQ-1", 2),  # 2: tenant only
    res("candidate", "HAL-POL-1", 1),
    res("candidate", "HAL-POL-1", 1, "candidate"),
    res("candidate", "HAL-HR-9", 2, "candidate"),  # candidate-only leak
    res(
        "snippet",
        "HAL-POL-1",
        1,
        snippet="Note: Salary bands for grade seven engineers range from sixty to eighty thousand euros",
    ),  # 13 words of HR text
    res("snippet", "HAL-POL-1", 2, snippet="salary bands for grade seven engineers range from sixty"),  # 9 words
    res("snippet", "HAL-FAQ-2", 3, snippet=BOILER),  # also in a visible unit
    res("metadata", "HAL-FAQ-2", 1, metadata={"see_also": ["HAL-HR-9"]}),  # names a forbidden id
    res("metadata", "HAL-FAQ-2", 2, metadata={"see_also": "HAL-HR-90", "self": "HAL-FAQ-2"}),  # no such id
    res("metadata", "HAL-FAQ-2", 3, metadata={"parent": "HAL-POL-1"}),  # permitted id
    res("open", "HAL-OPEN", 1),  # no acl, not required
    res("nobody", "HAL-HR-9", 1),  # unchecked, not passing
    res("open", "GONE-DOC", 2),  # not in the manifest
]
LABELS = [{"case_id": "multi", "document_id": "HAL-POL-1", "chunk_id": "HAL-POL-1#01", "grade": 3}]


def store(tmp_path: Path, **dataset: object) -> duckdb.DuckDBPyConnection:
    ds = {"name": "t", "version": "1", "unit": "chunk", "relevance_threshold": 2, **dataset}
    return make_store(
        tmp_path,
        dataset=ds,
        cases=CASES,
        labels=LABELS,
        documents=DOCS,
        runs=[{"run": {"run_id": "r", "k": 10}, "results": RESULTS}],
    )


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return store(tmp_path_factory.mktemp("leak"))


def found(t: object) -> set[tuple[str, str, int, str]]:
    return {(r["case_id"], r["stage"], r["rank"], r["rule"]) for r in t.to_pylist()}  # type: ignore[attr-defined]


def test_every_leaked_row_and_only_those(con: duckdb.DuckDBPyConnection) -> None:
    assert found(leakage(con, "r")) == {
        ("no-group", "final", 1, "acl-no-overlap"),
        ("tenant", "final", 2, "acl-no-overlap"),
        ("tenant", "final", 2, "tenant-mismatch"),
        ("tenant-only", "final", 2, "tenant-mismatch"),
        ("candidate", "candidate", 2, "acl-no-overlap"),
        ("snippet", "final", 1, "snippet-of-forbidden-unit"),
        ("metadata", "final", 1, "metadata-of-forbidden-unit"),
    }


def test_leak_rows_name_principal_unit_and_reason(con: duckdb.DuckDBPyConnection) -> None:
    rows = {(r["case_id"], r["rank"], r["rule"]): r for r in leakage(con, "r").to_pylist()}
    t = rows[("tenant-only", 2, "tenant-mismatch")]
    assert (t["principal_id"], t["document_id"], t["chunk_id"]) == ("emma", "KST-FAQ-1", "KST-FAQ-1#01")
    assert t["detail"] == "KST-FAQ-1#01: unit tenant kestrel, principal tenant halvorsen"
    assert rows[("no-group", 1, "acl-no-overlap")]["detail"] == (
        "HAL-ENG-3#01: unit acl [eng, support], principal groups [all-staff]"
    )
    snip = rows[("snippet", 1, "snippet-of-forbidden-unit")]
    assert snip["forbidden_units"] == ["HAL-HR-9#01"]
    assert snip["detail"].startswith("quotes 2 run(s) of 12 words of forbidden unit HAL-HR-9#01")
    meta = rows[("metadata", 1, "metadata-of-forbidden-unit")]
    assert meta["detail"].startswith("mentions id HAL-HR-9 of forbidden unit HAL-HR-9#01")


def test_candidate_only_leak_fails_the_run(con: duckdb.DuckDBPyConnection) -> None:
    report = check_run(con, "r")
    assert not report.passed
    assert report.counts()["candidate_only_leaked_cases"] == 1
    assert report.counts()["leaked_cases"] == 6


def test_case_without_principal_is_unchecked_not_passing(con: duckdb.DuckDBPyConnection) -> None:
    assert unchecked_cases(con, "r").to_pylist() == [
        {"case_id": "nobody", "reason": "no principal: leakage cannot be checked", "has_results": True}
    ]
    assert "nobody" not in {r["case_id"] for r in leakage(con, "r").to_pylist()}


def test_unit_absent_from_manifest_is_unverifiable(con: duckdb.DuckDBPyConnection) -> None:
    rows = unverifiable_results(con, "r").to_pylist()
    assert [(r["case_id"], r["stage"], r["rows"], r["first_rank"], r["first_units"]) for r in rows] == [
        ("open", "final", 1, 2, "GONE-DOC#01")
    ]
    report = check_run(con, "r")
    assert report.counts()["unverifiable_rows"] == 1
    assert report.counts()["unverifiable_cases"] == 1
    shown = report.findings().filter(pc.equal(report.findings()["check"], "unverifiable")).to_pylist()
    assert [(r["case_id"], r["rule"]) for r in shown] == [("open", "unit-not-in-manifest")]
    assert shown[0]["detail"] == "1 row(s) whose unit is not in the corpus manifest; first by rank: GONE-DOC#01"


def test_unverifiable_rows_are_counted_per_case_with_the_first_five_ids_by_rank(tmp_path: Path) -> None:
    """Without a manifest row for any of them, seven results of one list give one row: 7, ranks 1.., five ids."""
    con = duckdb.connect(":memory:")
    con.execute(
        "CREATE TABLE results AS SELECT 'r' AS run_id, 'q' AS case_id, 'final' AS stage, i AS rank, "
        "'d' || (8 - i) AS document_id, NULL::VARCHAR AS chunk_id, 'd' || (8 - i) AS unit_id, 1.0 AS score, "
        "NULL::VARCHAR AS snippet, NULL::JSON AS metadata FROM range(1, 8) t(i)"
    )
    con.execute(
        "CREATE TABLE documents (document_id VARCHAR, chunk_id VARCHAR, unit_id VARCHAR, title VARCHAR, "
        "acl VARCHAR[], tenant VARCHAR, language VARCHAR, region VARCHAR, product VARCHAR, doc_type VARCHAR, "
        "source_system VARCHAR, chunk_kind VARCHAR, status VARCHAR, version VARCHAR, effective_from DATE, "
        "effective_to DATE)"
    )
    con.execute("CREATE TABLE current_dataset (acl_required BOOLEAN)")
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")  # no derived (partial) manifest
    con.execute("CREATE TABLE runs AS SELECT 'r' AS run_id")
    from ragtriage.checks.leakage import _UNVERIFIABLE_SQL

    row = con.sql(_UNVERIFIABLE_SQL, params={"run_id": "r"}).fetchall()
    assert [r[:6] for r in row] == [("r", "q", "final", 7, 1, "d7, d6, d5, d4, d3")]


def test_acl_less_unit_leaks_only_where_the_dataset_requires_acls(tmp_path: Path) -> None:
    """The loader refuses acl-less units once acl_required is set, so the flag is raised after loading."""
    con = store(tmp_path)
    con.execute("UPDATE datasets SET acl_required = true")
    leaks = found(leakage(con, "r"))
    assert ("open", "final", 1, "acl-missing") in leaks
    assert len(leaks) == 8


def test_unknown_run_is_a_store_error(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(StoreError, match="unknown run 'nope'"):
        leakage(con, "nope")


def test_document_mode_is_strict_when_chunks_differ_in_acl(tmp_path: Path) -> None:
    """A document-level row stands for all its chunks; a chunk-level row only for its own chunk."""
    docs = [
        {"document_id": "MIX", "chunk_id": "MIX#1", "acl": ["all-staff"]},
        {"document_id": "MIX", "chunk_id": "MIX#2", "acl": ["hr"]},
    ]
    con = make_store(
        tmp_path,
        dataset={"name": "t", "version": "1", "unit": "document"},
        cases=[{"id": "d", "query": "q", "principal": EMMA}, {"id": "c", "query": "q", "principal": EMMA}],
        labels=[{"case_id": "d", "document_id": "MIX", "grade": 3}],
        documents=docs,
        runs=[
            {
                "run": {"run_id": "r", "k": 10},
                "results": [
                    {"case_id": "d", "rank": 1, "document_id": "MIX"},
                    {"case_id": "c", "rank": 1, "document_id": "MIX", "chunk_id": "MIX#1"},
                ],
            }
        ],
    )
    rows = leakage(con, "r").to_pylist()
    assert [(r["case_id"], r["rule"], r["forbidden_units"]) for r in rows] == [("d", "acl-no-overlap", ["MIX#2"])]


GROUPS = ("a", "b", "c")
unit_st = st.tuples(st.sampled_from(("t1", "t2")), st.lists(st.sampled_from(GROUPS), min_size=1, unique=True))
principal_st = st.tuples(st.sampled_from(("t1", "t2")), st.lists(st.sampled_from(GROUPS), unique=True))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    units=st.lists(unit_st, min_size=1, max_size=5),
    principals=st.lists(principal_st, min_size=1, max_size=3),
    picks=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4), st.booleans()), min_size=1, max_size=8),
)
@pytest.mark.slow
def test_leaks_match_an_independent_oracle(
    units: list[tuple[str, list[str]]],
    principals: list[tuple[str, list[str]]],
    picks: list[tuple[int, int, bool]],
) -> None:
    """Rows leak exactly when tenants differ or acl and groups are disjoint, whatever the stage."""
    docs = [
        {"document_id": f"U{i}", "chunk_id": f"U{i}#1", "tenant": t, "acl": acl} for i, (t, acl) in enumerate(units)
    ]
    cases = [
        {"id": f"c{j}", "query": "q", "principal": {"id": f"p{j}", "groups": g, "tenant": t}}
        for j, (t, g) in enumerate(principals)
    ]
    rows, ranks, expected = [], {}, set()
    for case_i, unit_i, candidate in picks:
        case_i, unit_i = case_i % len(principals), unit_i % len(units)
        stage = "candidate" if candidate else "final"
        rank = ranks[(case_i, stage)] = ranks.get((case_i, stage), 0) + 1
        rows.append(
            {
                "case_id": f"c{case_i}",
                "stage": stage,
                "rank": rank,
                "document_id": f"U{unit_i}",
                "chunk_id": f"U{unit_i}#1",
            }
        )
        (ut, acl), (pt, groups) = units[unit_i], principals[case_i]
        if ut != pt:
            expected.add((f"c{case_i}", stage, rank, "tenant-mismatch"))
        if not set(acl) & set(groups):
            expected.add((f"c{case_i}", stage, rank, "acl-no-overlap"))
    with tempfile.TemporaryDirectory() as tmp:
        con = make_store(
            Path(tmp),
            cases=cases,
            documents=docs,
            labels=[{"case_id": "c0", "document_id": "U0", "chunk_id": "U0#1", "grade": 1}],
            runs=[{"run": {"run_id": "r", "k": 10}, "results": rows}],
        )
        assert found(leakage(con, "r")) == expected
        con.close()
