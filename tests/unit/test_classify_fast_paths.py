"""The classifier's fast paths against its general ones.

Runs without repeats whose lists are ranks 1..n take position = rank (no window); every other run is
de-duplicated by windows. The crowding document comes from the top-k rows' documents, counted per case only for
documents that more than one unit stands for. Both must give what the general path gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.classify import classify_run, unit_locations
from ragtriage.classify.locations import location_ctes
from tests.unit.test_classify_locations import build, case, label, results

CASES = [case("c"), case("d"), case("e")]
LABELS = [
    label("c", "F1#1", 3),
    label("c", "F2#1", 3),
    label("d", "F3#1", 3),
    label("e", "B#6", 3),
    label("e", "F9#1", 0),
]
ROWS = (
    results("c", ["B#1", "F1#1", "B#2", "F5#1", "B#3", "F2#1"])
    + results("d", ["D#1", "B#1", "D#2", "B#2", "F6#1"])
    + results("e", ["F9#1", "F7#1", "F8#1", "B#1"])
)


def _by_case(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    rows = classify_run(con, "r", store=False).to_pylist()
    return {r["case_id"]: {**r, "evidence": json.loads(r["evidence"])} for r in rows}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    return build(tmp_path_factory.mktemp("plain"), CASES, LABELS, ROWS, k=4)


@pytest.mark.slow
def test_plain_run_reads_positions_from_ranks(plain: duckdb.DuckDBPyConnection) -> None:
    (repeats,) = plain.execute("SELECT has_repeats FROM runs WHERE run_id = 'r'").fetchone()  # type: ignore[misc]
    assert repeats is False
    facts = _by_case(plain)["c"]["evidence"]["facts"]
    assert facts["top_units"] == ["B#1", "F1#1", "B#2", "F5#1"]
    assert facts["n_found"] == 1  # F2#1 is at rank 6, below k 4
    assert [u["unit_id"] for u in facts["missing"]] == ["F2#1"] and facts["missing"][0]["final_rank"] == 6


def test_crowding_counts_documents_of_several_units(plain: duckdb.DuckDBPyConnection) -> None:
    facts = {c: r["evidence"]["facts"] for c, r in _by_case(plain).items()}
    # c: B holds B#1, B#2 of the top 4 -> 2 (under the bar of max(3, k/2), so no crowding document)
    assert (facts["c"]["crowding_count"], facts["c"]["crowding_document"]) == (2, None)
    # d: B and D hold two each; the tie goes to the smaller id, and the count is 2
    assert facts["d"]["crowding_count"] == 2
    # e: four documents, one row each
    assert (facts["e"]["crowding_count"], facts["e"]["n_judged"]) == (1, 1)


def test_crowding_document_at_the_bar(tmp_path: Path) -> None:
    rows = results("c", ["B#1", "B#2", "F5#1", "B#3"]) + results("d", ["F5#1", "B#1", "D#1", "D#2"])
    con = build(tmp_path, [case("c"), case("d")], [label("c", "F1#1", 3), label("d", "F1#1", 3)], rows, k=4)
    facts = {c: r["evidence"]["facts"] for c, r in _by_case(con).items()}
    assert (facts["c"]["crowding_count"], facts["c"]["crowding_document"]) == (3, "B")
    assert (facts["d"]["crowding_count"], facts["d"]["crowding_document"]) == (2, None)


def _irregular(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    """The same lists as ``ROWS`` with rank gaps (ranks doubled) and a repeat of each case's first unit at the
    end, so only the window path can number them: the de-duplicated lists are the plain ones."""
    rows: list[dict[str, Any]] = []
    for c in ("c", "d", "e"):
        mine = [r for r in ROWS if r["case_id"] == c]
        rows += [{**r, "rank": 2 * (i + 1)} for i, r in enumerate(mine)]
        rows.append({**mine[0], "rank": 2 * len(mine) + 2})
    return build(tmp_path, CASES, LABELS, rows, k=4)


@pytest.mark.slow
def test_window_path_agrees_with_the_plain_path(plain: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    con = _irregular(tmp_path)
    (repeats,) = con.execute("SELECT has_repeats FROM runs WHERE run_id = 'r'").fetchone()  # type: ignore[misc]
    assert repeats is True
    fields = ("case_id", "failure", "category", "rule", "confidence", "evidence", "patterns", "experiments", "k")
    want = [{f: r[f] for f in fields} for r in classify_run(plain, "r", store=False).to_pylist()]
    got = [{f: r[f] for f in fields} for r in classify_run(con, "r", store=False).to_pylist()]
    assert got == want
    ranks = {r["unit_id"]: r["final_rank"] for r in unit_locations(con, "r", "c").to_pylist()}
    assert ranks == {"F1#1": 2, "F2#1": 6}  # positions, not the recorded ranks 4 and 12


@pytest.mark.slow
def test_rank_gaps_without_repeats_take_the_window_path(plain: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    rows = [
        {**r, "rank": 10 * (i + 1)} for c in ("c", "d", "e") for i, r in enumerate(r for r in ROWS if r["case_id"] == c)
    ]
    con = build(tmp_path, CASES, LABELS, rows, k=4)
    (repeats,) = con.execute("SELECT has_repeats FROM runs WHERE run_id = 'r'").fetchone()  # type: ignore[misc]
    assert repeats is False
    want = {(r["case_id"], r["failure"]): r["evidence"] for r in classify_run(plain, "r", store=False).to_pylist()}
    got = {(r["case_id"], r["failure"]): r["evidence"] for r in classify_run(con, "r", store=False).to_pylist()}
    assert got == want


@pytest.mark.slow
def test_crowding_tie_goes_to_the_smaller_document_id(tmp_path: Path) -> None:
    rows = results("c", ["B#1", "A#1", "B#2", "A#2", "B#3", "A#3", "F1#1"])
    con = build(tmp_path, [case("c")], [label("c", "F1#1", 3)], rows, k=6)
    facts = _by_case(con)["c"]["evidence"]["facts"]
    assert (facts["crowding_count"], facts["crowding_document"]) == (3, "A")


def test_a_repeat_mid_list_is_not_counted_in_later_positions(tmp_path: Path) -> None:
    # B#1 again at rank 3: de-duplicated, the list is B#1 F1#1 B#2 F5#1 B#3 F2#1, as metrics.ranking numbers it
    rows = results("c", ["B#1", "F1#1", "B#1", "B#2", "F5#1", "B#3", "F2#1"])
    con = build(tmp_path, [case("c")], [label("c", "F1#1", 3), label("c", "F2#1", 3)], rows, k=4)
    ranks = {r["unit_id"]: r["final_rank"] for r in unit_locations(con, "r", "c").to_pylist()}
    assert ranks == {"F1#1": 2, "F2#1": 6}  # counting the repeat would put F2#1 at 7


def test_only_the_lists_that_need_it_are_numbered_by_windows(tmp_path: Path) -> None:
    # the run has a repeat (c) and a rank gap (d), so it is no plain run; e is still ranks 1..n of distinct units
    rows = (
        results("c", ["B#1", "F1#1", "B#1", "B#2", "F5#1", "B#3", "F2#1"])
        + [{**r, "rank": 10 * (i + 1)} for i, r in enumerate(results("d", ["D#1", "F3#1", "D#2"]))]
        + results("e", ["F9#1", "F7#1", "F8#1", "B#6"])
    )
    con = build(tmp_path, CASES, LABELS, rows, k=4)
    windowed = con.execute(
        f"WITH {location_ctes()} SELECT case_id, count(*) FROM irregular_positions GROUP BY ALL ORDER BY 1",
        {"run_id": "r", "k": 4},
    ).fetchall()
    assert windowed == [("c", 6), ("d", 3)]  # c de-duplicated from 7 rows; e not read by a window at all
    ranks = {(c, r["unit_id"]): r["final_rank"] for c in "cde" for r in unit_locations(con, "r", c).to_pylist()}
    assert ranks == {("c", "F1#1"): 2, ("c", "F2#1"): 6, ("d", "F3#1"): 2, ("e", "B#6"): 4}
