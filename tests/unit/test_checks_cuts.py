"""Each check reads only the result rows it concerns (``units.run_results(cut)``); the cuts must never lose a finding.

The fixture sits on every edge of every cut: a unit stale for one case's as-of date only, a row standing for a
stale chunk through its document (its own chunk id unknown), a fresh chunk of a document with a stale chunk, a
pair whose unfiltered side has no filter and no principal, a case whose principal is only a group list. Each check
is run with its cut and again with the cut removed (the full run): the rows must be the same, and the
hand-derived findings must be there.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from ragtriage.checks import negatives, scope, staleness
from ragtriage.checks.leakage import LEAKAGE_SQL, PRINCIPAL_CUT
from ragtriage.checks.units import MATCHED, run_results, with_query
from tests.factory import make_store

ALICE = {"id": "alice", "groups": ["staff"], "tenant": "t1"}
GROUP_ONLY = {"groups": ["staff"]}


def doc(doc_id: str, chunk: str = "01", **attrs: object) -> dict:
    base = {"document_id": doc_id, "chunk_id": f"{doc_id}#{chunk}", "acl": ["staff"], "tenant": "t1"}
    return {**base, **attrs}


DOCS = [
    doc("pol-2023", effective_from="2023-01-01", effective_to="2023-12-31", doc_type="policy"),
    doc("pol-2024", effective_from="2024-01-01", doc_type="policy"),
    doc("future", effective_from="2023-09-01"),  # not yet in force on 2023-06-01 only
    doc("mixed", "a", status="archived"),  # one archived chunk, one current chunk
    doc("mixed", "b", status="current"),
    doc("plain"),
    doc("secret", acl=["board"]),
]
CASES = [
    {"id": "as-of-2023", "query": "a", "principal": ALICE, "filters": {"effective_on": "2023-06-01"}},
    {"id": "as-of-run", "query": "b", "principal": GROUP_ONLY},  # run date 2024-06-01
    {"id": "by-document", "query": "c", "principal": ALICE},
    {"id": "fresh-chunk", "query": "d", "principal": ALICE},
    {"id": "with", "query": "Same  Query", "principal": ALICE, "filters": {"tenant": "t1"}},
    {"id": "without", "query": "same query"},  # no filter, no principal: checked through the pair
    {"id": "untouched", "query": "e"},
    {"id": "silent", "query": "f"},  # no principal and no results
    {"id": "neg", "query": "g", "expected_behavior": "empty", "answerable": False},
]


def res(case: str, doc_id: str, chunk: str = "01", stage: str = "final") -> dict:
    return {"case_id": case, "stage": stage, "document_id": doc_id, "chunk_id": f"{doc_id}#{chunk}"}


RESULTS = [
    res("as-of-2023", "future"),
    res("as-of-2023", "pol-2023"),
    res("as-of-run", "pol-2023"),  # expired on 2024-06-01, ranked above the 2024 version
    res("as-of-run", "pol-2024"),
    res("as-of-run", "future"),
    res("as-of-run", "secret", stage="candidate"),  # a group-only principal still leaks
    res("by-document", "mixed", chunk="zz"),  # a chunk the manifest lacks: stands for both chunks, one archived
    res("fresh-chunk", "mixed", chunk="b"),  # its own chunk is current: not stale
    res("with", "plain"),
    res("without", "plain"),
    res("without", "secret"),  # alice may not see it: the missing filter broadened access
    res("untouched", "plain"),
    res("untouched", "gone"),  # not in the manifest
    res("neg", "plain"),
]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return make_store(
        tmp_path_factory.mktemp("cuts"),
        cases=CASES,
        documents=DOCS,
        labels=[{"case_id": "as-of-2023", "document_id": "plain", "chunk_id": "plain#01", "grade": 2}],
        runs=[{"run": {"run_id": "r", "k": 10, "created_at": "2024-06-01T10:00:00Z"}, "results": RESULTS}],
    )


def random_store(root: Path, seed: int) -> duckdb.DuckDBPyConnection:
    """A seeded random store with version families: ids with version tokens, chunks of two doc types, dates and
    statuses around the cases' dates, principals and filters on some cases, lists mixing families."""
    rng = random.Random(seed)
    docs = []
    for stem in ("pol", "guide", "memo"):
        for version in ("2022", "2023", "2024", "v2", "v3"):
            for chunk in range(rng.randint(1, 2)):
                start = rng.choice([None, "2022-01-01", "2023-07-01", "2024-01-01"])
                end = rng.choice([None, "2023-06-30", "2023-12-31"])
                if start and end and end < start:
                    start, end = end, start
                docs.append(
                    doc(
                        f"{stem}-{version}",
                        f"{chunk:02d}",
                        doc_type=rng.choice(["policy", "faq"]),
                        tenant=rng.choice(["t1", "t2"]),
                        acl=[rng.choice(["staff", "board"])],
                        status=rng.choice(["current", "current", "archived"]),
                        effective_from=start,
                        effective_to=end,
                        language=rng.choice(["en", "de"]),
                    )
                )
    cases = []
    for i in range(12):
        case: dict = {"id": f"c{i}", "query": f"q{i % 6}"}
        if rng.random() < 0.6:
            case["principal"] = rng.choice([ALICE, GROUP_ONLY])
        if rng.random() < 0.4:
            case["filters"] = rng.choice([{"effective_on": "2023-03-01"}, {"language": "en"}, {"tenant": "t1"}])
        cases.append(case)
    results = []
    for case in cases:
        for stage in ("candidate", "final"):
            for d in rng.sample(docs, 8):
                chunk = d["chunk_id"].split("#")[1] if rng.random() < 0.7 else "zz"
                results.append(res(case["id"], d["document_id"], chunk, stage))
    unique = list({(r["case_id"], r["stage"], r["chunk_id"]): r for r in results}.values())
    return make_store(
        root,
        cases=cases,
        documents=docs,
        labels=[{"case_id": "c0", "document_id": docs[0]["document_id"], "chunk_id": docs[0]["chunk_id"], "grade": 2}],
        runs=[{"run": {"run_id": "r", "k": 10, "created_at": "2024-06-01T10:00:00Z"}, "results": unique}],
    )


@pytest.fixture(scope="module", params=[1, 2, 3])
def random_con(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> duckdb.DuckDBPyConnection:
    return random_store(tmp_path_factory.mktemp(f"random{request.param}"), request.param)


def uncut(sql: str, cut: str, full: Callable[[], str] = run_results) -> str:
    """``sql`` reading the whole run instead of the rows ``cut`` keeps."""
    whole = sql.replace(run_results(cut), full())
    assert whole != sql, "the cut is not in this statement"
    return whole


CHECKS = {
    "leakage": (LEAKAGE_SQL, PRINCIPAL_CUT),
    "scope": (scope._SCOPE_SQL, scope.SCOPE_CUT),
    "pairs": (scope._PAIRS_SQL, scope.PAIR_CUT),
    "stale": (staleness._STALE_SQL, staleness.STALE_CUT),
    "versions": (staleness._PAIRS_SQL + " ORDER BY case_id, stage, family", staleness.STALE_CUT),
}

# The version pairs as first written: every matched row of the run grouped by (row, family), then by family. The
# stored statement finds the stale rows first and the fresh rows of their families by one probe; it must agree.
VERSION_PAIRS_BY_GROUPING = (
    with_query(staleness.AS_OF, run_results(), MATCHED, staleness.JUDGED)
    + f"""
, families AS (
    SELECT document_id, concat_ws('|', tenant, doc_type, {staleness._STEM}) AS family FROM documents GROUP BY ALL
),
ranked AS (
    SELECT j.run_id, j.case_id, j.stage, j.rank, j.document_id, bool_or(j.reason IS NOT NULL) AS stale, f.family
    FROM judged j JOIN families f USING (document_id)
    GROUP BY j.run_id, j.case_id, j.stage, j.rank, j.document_id, f.family
),
per_family AS (
    SELECT run_id, case_id, stage, family,
           arg_min(document_id, rank) FILTER (WHERE NOT stale) AS current_document_id,
           min(rank) FILTER (WHERE NOT stale) AS current_rank,
           arg_min(document_id, rank) FILTER (WHERE stale) AS stale_document_id,
           min(rank) FILTER (WHERE stale) AS stale_rank
    FROM ranked GROUP BY run_id, case_id, stage, family
)
SELECT run_id, case_id, stage, family, current_document_id, current_rank, stale_document_id, stale_rank,
       stale_rank < current_rank AS stale_first,
       'stale ' || stale_document_id || ' at rank ' || stale_rank || ', in force ' || current_document_id
       || ' at rank ' || current_rank AS detail
FROM per_family WHERE current_rank IS NOT NULL AND stale_rank IS NOT NULL
ORDER BY case_id, stage, family
"""
)


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    return con.sql(sql, params={"run_id": "r"}).to_arrow_table().to_pylist()


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_cut_keeps_every_finding_of_the_full_run(con: duckdb.DuckDBPyConnection, name: str) -> None:
    sql, cut = CHECKS[name]
    found = rows(con, sql)
    assert found, f"{name}: the fixture must give this check findings"
    assert found == rows(con, uncut(sql, cut))


def test_version_pairs_agree_with_grouping_every_row(con: duckdb.DuckDBPyConnection) -> None:
    found = rows(con, CHECKS["versions"][0])
    assert found and found == rows(con, VERSION_PAIRS_BY_GROUPING)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHECKS))
def test_random_stores_agree_with_the_full_run(random_con: duckdb.DuckDBPyConnection, name: str) -> None:
    sql, cut = CHECKS[name]
    assert rows(random_con, sql) == rows(random_con, uncut(sql, cut))


def test_random_stores_version_pairs_agree_with_grouping(random_con: duckdb.DuckDBPyConnection) -> None:
    found = rows(random_con, CHECKS["versions"][0])
    assert found == rows(random_con, VERSION_PAIRS_BY_GROUPING)
    assert any(r["stale_first"] for r in found) and not all(r["stale_first"] for r in found)


def test_negative_cut_keeps_every_outcome(con: duckdb.DuckDBPyConnection) -> None:
    sql = negatives._NEGATIVES_SQL
    whole = sql.replace(negatives.top_scores(negatives.NEGATIVE_CUT), negatives.top_scores())
    assert whole != sql
    found = rows(con, sql)
    assert [(r["case_id"], r["passed"], r["n_results"]) for r in found] == [("neg", False, 1)]
    assert found == rows(con, whole)


def test_stale_rows_at_each_cases_date_and_through_the_document(con: duckdb.DuckDBPyConnection) -> None:
    found = {(r["case_id"], r["document_id"], r["reason"]) for r in rows(con, staleness._STALE_SQL)}
    assert found == {
        ("as-of-2023", "future", "not-yet-effective"),  # from 2023-09-01, asked on 2023-06-01
        ("as-of-run", "pol-2023", "expired"),  # to 2023-12-31, asked on 2024-06-01 (the run's date)
        ("by-document", "mixed", "archived"),  # no chunk id: stands for the archived chunk too
    }  # fresh-chunk names the current chunk of 'mixed': not stale
    versions = rows(con, CHECKS["versions"][0])
    assert [(v["case_id"], v["stale_document_id"], v["current_document_id"], v["stale_first"]) for v in versions] == [
        ("as-of-run", "pol-2023", "pol-2024", True)
    ]


def test_leaks_and_broadened_pairs_outside_the_principal_cases(con: duckdb.DuckDBPyConnection) -> None:
    leaks = {(r["case_id"], r["stage"], r["document_id"]) for r in rows(con, LEAKAGE_SQL)}
    assert leaks == {("as-of-run", "candidate", "secret")}
    broadened = [r for r in rows(con, scope._SCOPE_SQL) if r["rule"] == "optional-filter-broadened"]
    assert [(r["case_id"], r["document_id"]) for r in broadened] == [("without", "secret")]


def test_unchecked_cases_say_whether_the_run_answered(con: duckdb.DuckDBPyConnection) -> None:
    from ragtriage.checks import unchecked_cases

    got = {r["case_id"]: r["has_results"] for r in unchecked_cases(con, "r").to_pylist()}
    assert got == {"without": True, "untouched": True, "silent": False, "neg": True}
