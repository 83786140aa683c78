"""The metrics' cut lists and the classifier's positions number the lists that need it a chunk of cases at a time
(``store.dedup.positions_within``), and give what the window definition gives over every row at once, on lists
that repeat units (chunks of one document)."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from ragtriage.classify import facts, locations, unit_locations
from ragtriage.classify.classify_run import with_checks
from ragtriage.classify.locations import location_ctes
from ragtriage.metrics.ranking import cut_lists, positions_sql
from ragtriage.store import dedup
from tests.unit.test_classify_locations import build, case, label, results


def _ranges(monkeypatch: pytest.MonkeyPatch, rows: int) -> list[int]:
    """Chunks of ``rows`` rows; the list of how many ranges each numbering took."""
    seen: list[int] = []
    chunks = dedup._chunks

    def counted(*args: Any) -> list[tuple[object, object]]:
        got = chunks(*args)
        seen.append(len(got))
        return got

    monkeypatch.setattr(dedup, "CHUNK_ROWS", rows)
    monkeypatch.setattr(dedup, "_chunks", counted)
    return seen


def _chunk_run(con: duckdb.DuckDBPyConnection, cases: int) -> None:
    """Run ``r``: four chunks of each document a list retrieves (the unit is the document), 60 rows a list, every
    fifth list with a rank gap; and a list of distinct units (read with no window)."""
    con.execute(f"""CREATE TABLE results AS
        SELECT 'r' AS run_id, 'final' AS stage, 'q' || lpad(CAST(c AS VARCHAR), 4, '0') AS case_id,
               CAST(k + 1 + CASE WHEN c % 5 = 0 AND k >= 3 THEN 7 ELSE 0 END AS INTEGER) AS rank,
               'd' || ((c * 7 + k // 4 * 13 + (k % 3)) % 40) AS unit_id
        FROM range({cases}) a(c), range(60) b(k)
        UNION ALL SELECT 'r', 'final', 'z', CAST(k + 1 AS INTEGER), 'u' || k FROM range(30) t(k)""")
    con.execute("CREATE TABLE runs AS SELECT 'r' AS run_id, true AS has_repeats")


@pytest.mark.parametrize("depth", [3, 10])
def test_cut_lists_are_the_window_definition(monkeypatch: pytest.MonkeyPatch, depth: int) -> None:
    con = duckdb.connect()
    _chunk_run(con, 200)
    ranges = _ranges(monkeypatch, 1_000)
    got = sorted(tuple(r.values()) for r in cut_lists(con, "r", "final", depth).to_pylist())
    whole = positions_sql("(SELECT case_id, unit_id, rank FROM results)")
    want = con.execute(f"SELECT case_id, unit_id, pos FROM ({whole}) WHERE pos <= {depth} ORDER BY ALL").fetchall()
    assert got == want and len(want) == 200 * depth + depth
    # within 3 the lists are distinct units at ranks 1..3 (no window); within 10 they repeat, numbered in chunks
    assert ranges == [] if depth == 3 else ranges[0] > 5
    assert sum(1 for c, _, p in got if c != "z" and p > 3) == 200 * (depth - 3)


def test_a_case_filter_cuts_the_numbered_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    con = duckdb.connect()
    _chunk_run(con, 20)
    _ranges(monkeypatch, 100)
    cut = (" AND case_id IN (SELECT unnest(?::VARCHAR[]))", [["q0003", "q0005", "z"]])
    got = sorted(tuple(r.values()) for r in cut_lists(con, "r", "final", 5, cut).to_pylist())
    whole = positions_sql("(SELECT case_id, unit_id, rank FROM results WHERE case_id IN ('q0003', 'q0005', 'z'))")
    assert got == con.execute(f"SELECT case_id, unit_id, pos FROM ({whole}) WHERE pos <= 5 ORDER BY ALL").fetchall()
    assert {c for c, _, _ in got} == {"q0003", "q0005", "z"}


def _documents(case_id: str, documents: list[str], start: int = 0) -> list[dict[str, Any]]:
    """A list of chunks where each document returns several chunks at neighbouring positions."""
    chunks = [f"{d}#{(i + start) % 3 + 1}" for i, d in enumerate(documents)]
    return results(case_id, chunks)


def _chunk_store(tmp_path: Any) -> duckdb.DuckDBPyConnection:
    """Units are chunks here, so a list repeats a unit when a chunk comes back twice; both runs repeat, with gaps."""
    cases = [case(c) for c in ("c", "d", "e", "f")]
    labels = [label(c, u, 3) for c in ("c", "d", "e", "f") for u in ("F1#1", "F2#1", "B#2")] + [
        label("d", "F3#1", 1),
        label("e", "F9#1", 0),
    ]
    run = []
    for n, c in enumerate(("c", "d", "e", "f")):
        rows = _documents(c, ["B", "B", "F1", "B", "B", "F5", "B", "B", "F2", "F3", "B", "F9"], n)
        run += [{**r, "rank": i + 1 + (5 if c == "e" and i >= 4 else 0)} for i, r in enumerate(rows)]
    other = [r for c in ("c", "d", "e", "f") for r in _documents(c, ["F2", "B", "B", "F1", "F2", "B"], 1)]
    con = build(tmp_path, cases, labels, run, other=other, k=4)
    assert con.execute("SELECT bool_and(has_repeats) FROM runs").fetchall() == [(True,)]
    return con


@pytest.mark.slow
def test_the_classifier_positions_are_the_window_definition(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    con = _chunk_store(tmp_path)
    params = {"run_id": "r", "k": 4}
    windowed = {
        name: con.execute(f"WITH {location_ctes()} SELECT * FROM {name} ORDER BY ALL", params).fetchall()
        for name in ("labelled_run", "locations")
    }
    top = con.execute(
        f"""WITH {location_ctes()} SELECT case_id, pos, unit_id, document_id, snippet FROM positions
            WHERE run_id = 'r' AND stage = 'final' AND pos <= 4 ORDER BY ALL""",
        params,
    ).fetchall()
    ranges = _ranges(monkeypatch, 10)

    def kept(cur: duckdb.DuckDBPyConnection, run_id: str, k: int) -> dict[str, list[Any]]:
        with facts.kept_tables(cur, run_id, k):
            tables = (facts.LABELLED_TABLE, facts.LOCATIONS_TABLE, facts.TOP_TABLE)
            return {t: cur.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}

    ((_, got),) = with_checks(con, "r", [4], kept)
    assert ranges and ranges[0] > 2  # numbered a few cases at a time
    assert got[facts.LABELLED_TABLE] == windowed["labelled_run"]
    assert got[facts.LOCATIONS_TABLE] == windowed["locations"]
    kept_top = got[facts.TOP_TABLE]
    failing = {r[0] for r in kept_top}
    assert kept_top == [r for r in top if r[0] in failing] and failing
    assert {loc[9] for loc in windowed["locations"]} >= {"final-top-k", "final-below-k"}


@pytest.mark.slow
def test_every_case_locations_are_the_window_definition(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``unit_locations`` of every case numbers the lists a chunk of cases at a time, as the classifier does, and
    gives the rows (and order) of the windows over every row at once."""
    con = _chunk_store(tmp_path)
    windowed = con.execute(f"WITH {location_ctes()} {locations._ORDER}", {"run_id": "r", "k": 4}).fetchall()
    ranges = _ranges(monkeypatch, 10)
    got = [tuple(r.values()) for r in unit_locations(con, "r", k=4).to_pylist()]
    assert ranges and ranges[0] > 2  # numbered a few cases at a time
    assert got == windowed
    assert {loc[9] for loc in got} >= {"final-top-k", "final-below-k"}
