"""Labels and qrels are stored in case order, so that reading a few cases (the TUI's case screen) touches a few
row groups: DuckDB skips the others by their min/max case id. A 30M-row store's qrels lookup went from 27 ms (a
full scan) to under 2 ms, and a case opened in 348 ms instead of 379 ms (README "Performance")."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.store import connect
from tests.factory import load_sample


def _in_case_order(rows: list[tuple[str, int]]) -> bool:
    return rows == sorted(rows)


@pytest.mark.slow
def test_labels_and_qrels_are_stored_in_case_order(tmp_path: Path) -> None:
    con = connect(load_sample(tmp_path / "s.duckdb", runs=("bm25",)))
    # a scan returns rows in the order they were inserted (DuckDB keeps insertion order by default)
    labels = con.execute("SELECT case_id, line FROM all_labels").fetchall()
    qrels = con.execute("SELECT case_id, unit_id FROM qrels").fetchall()
    assert len(labels) > 100 and len(qrels) > 100
    assert _in_case_order(labels) and _in_case_order(qrels)
    # the sample's labels file is not in case order, so the order comes from the load, not from the file
    in_file = con.execute("SELECT case_id, line FROM all_labels ORDER BY line").fetchall()
    assert not _in_case_order([(c, 0) for c, _ in in_file])
