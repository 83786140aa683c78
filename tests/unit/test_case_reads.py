"""Reads of a few cases (the TUI's case screen) give exactly the rows of the whole-run reads for those cases:
unit_locations, metrics.per_case and classify.failures, on a store with a run holding a repeated unit (positions
by window) beside a plain run (positions = ranks), a case only in the candidates, a case absent from one run, a
case without labels, and an unpermitted unit. And metrics.summarize and metrics.slices over a per-case table the
caller already has (the TUI's) equal those that compute it."""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ragtriage.classify import classify_run, failures, unit_locations
from ragtriage.metrics.context import MetricsError
from ragtriage.metrics.per_case import per_case
from ragtriage.metrics.slices import slices
from ragtriage.metrics.summary import summarize
from tests.unit.test_classify_locations import build, case, label, results

CASES = ["a", "b", "c", "d", "e"]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    labels = [
        *(label("a", u, g) for u, g in (("F1#1", 3), ("F2#1", 2), ("F5#1", 1))),
        *(label("b", u, g) for u, g in (("F3#1", 3), ("B#2", 2), ("C#1", 3))),
        *(label("c", u, 2) for u in ("F4#1", "F6#1")),
        *(label("d", u, 3) for u in ("F7#1", "A#9")),
    ]
    rows = (
        results("a", ["F8#1", "F1#1", "F9#1", "F10#1", "F2#1"])
        + results("b", ["B#1", "B#1", "F3#1", "B#3", "C#1", "B#2"])  # a repeat: run r is numbered by windows
        + results("c", ["B#4", "B#5"])
        + results("c", ["F6#1", "F4#1"], stage="candidate")
        + results("e", ["F1#1"])
    )
    other = results("a", ["F2#1", "F1#1"]) + results("d", ["F8#1", "F7#1"]) + results("b", ["B#2"])
    store = build(tmp_path_factory.mktemp("case_reads"), [case(c) for c in CASES], labels, rows, k=3, other=other)
    classify_run(store, "r")
    return store


def rows_of(table: pa.Table, ids: list[str], drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    kept = table.filter(pc.is_in(table.column("case_id"), pa.array(ids, pa.string()))).drop_columns(list(drop))
    return sorted(kept.to_pylist(), key=lambda r: (r["case_id"], str(r.get("unit_id")), str(r.get("failure"))))


@pytest.mark.slow
@pytest.mark.parametrize("ids", [[c] for c in CASES] + [["b", "d"], CASES])
def test_locations_of_some_cases_are_those_of_the_whole_run(con: duckdb.DuckDBPyConnection, ids: list[str]) -> None:
    whole = unit_locations(con, "r")
    some = unit_locations(con, "r", ids if len(ids) > 1 else ids[0])
    assert rows_of(some, ids, ("indexed",)) == rows_of(whole, ids, ("indexed",))
    assert set(some.column("indexed").to_pylist()) <= {None}  # not looked up for a few cases
    assert some.column_names == whole.column_names


def test_the_fixture_reaches_every_location(con: duckdb.DuckDBPyConnection) -> None:
    found = {(r["case_id"], r["unit_id"]): r["location"] for r in unit_locations(con, "r", CASES).to_pylist()}
    assert found == {
        ("a", "F1#1"): "final-top-k",
        ("a", "F2#1"): "final-below-k",  # rank 5 of k 3
        ("b", "F3#1"): "final-top-k",  # recorded rank 3, position 2 after the repeated B#1
        ("b", "B#2"): "final-below-k",  # recorded rank 6, position 5
        ("b", "C#1"): "unpermitted",  # position 4, and the principal may not see it
        ("c", "F4#1"): "candidate",
        ("c", "F6#1"): "candidate",
        ("d", "F7#1"): "other-run",
        ("d", "A#9"): "absent-from-corpus",
    }


@pytest.mark.slow
@pytest.mark.parametrize("ids", [[c] for c in CASES] + [["a", "c"], ["nope"]])
def test_per_case_of_some_cases_is_that_of_the_whole_run(con: duckdb.DuckDBPyConnection, ids: list[str]) -> None:
    for run in ("r", "o"):
        for counts in (True, False):
            whole = per_case(con, run, (1, 3, 5), counts=counts)
            assert rows_of(per_case(con, run, (1, 3, 5), counts=counts, cases=ids), ids) == rows_of(whole, ids)


def test_per_case_of_one_case_by_hand(con: duckdb.DuckDBPyConnection) -> None:
    (b,) = per_case(con, "r", (3,), cases=["b"]).to_pylist()
    # b in r, de-duplicated: B#1, F3#1 (grade 3), B#3, C#1 (3), B#2 (2): one relevant unit of three in the top 3
    assert b["P@3"] == pytest.approx(1 / 3) and b["R@3"] == pytest.approx(1 / 3) and b["RR@3"] == 0.5
    assert b["n_retrieved"] == 5 and b["n_relevant_retrieved"] == 3


def test_failures_of_some_cases_are_those_of_the_whole_run(con: duckdb.DuckDBPyConnection) -> None:
    whole = failures(con, "r")
    assert whole.num_rows > 0
    for ids in ([c] for c in CASES):
        assert rows_of(failures(con, "r", case_ids=ids), ids) == rows_of(whole, ids)
    assert rows_of(failures(con, "r", case_ids=CASES), CASES) == rows_of(whole, CASES)
    assert failures(con, "r", case_ids=[]).num_rows == 0


@pytest.mark.slow
def test_summary_and_slices_from_a_given_per_case_table(con: duckdb.DuckDBPyConnection) -> None:
    table = per_case(con, "r", (1, 3, 5, 10), counts=False)  # a superset of the cutoffs asked
    assert summarize(con, "r", per_case=table).to_arrow() == summarize(con, "r").to_arrow()
    for by in ("query_type", "evidence_count", "doc_type"):
        given = slices(con, "r", by=by, ks=(3, 5, 10), k=3, per_case=table)
        assert given == slices(con, "r", by=by, ks=(3, 5, 10), k=3)
        assert given.num_rows >= 1
    with pytest.raises(MetricsError, match=r"without .*nDCG@10"):
        summarize(con, "r", per_case=per_case(con, "r", (3, 5), counts=False))
    with pytest.raises(MetricsError, match="without zero_hit@3"):
        slices(con, "r", ks=(3,), k=3, per_case=table.drop_columns(["zero_hit@3"]))
