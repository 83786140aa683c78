"""The duplicate-in-list check's hashes (contract/rules.py) are numpy's, outside DuckDB's memory cap, so they are
read as one array of 8 bytes a row and nothing more: streamed a batch at a time, never a whole fetched result
beside them. Their repeats and the row rules' flag come out as a whole fetch gives them."""

from __future__ import annotations

import tracemalloc

import duckdb
import numpy as np
import pytest

from ragtriage.contract import rules

ROWS = 2_000_000


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    # every 5th row outside the key (NULL hash); hashes repeat where i % 100_000 repeats, i.e. 20 rows each
    c.execute(
        f"""CREATE TEMP TABLE t AS
            SELECT CASE WHEN i % 5 <> 0 THEN hash(i % 100000) END AS h, i = {ROWS - 3} AS hit FROM range({ROWS}) t(i)"""
    )
    return c


def test_the_hashes_are_read_a_batch_at_a_time_into_one_array(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rules, "_BATCH_ROWS", 100_000)
    rules._hash_column(con, "SELECT h, hit FROM t LIMIT 10")  # imports its modules before the count starts
    tracemalloc.start()
    try:
        hashes, hit = rules._hash_column(con, "SELECT h, hit FROM t")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    expected = con.execute("SELECT h FROM t WHERE h IS NOT NULL").fetchnumpy()["h"]
    assert hit is True
    assert len(hashes) == ROWS * 4 // 5 and sorted(hashes) == sorted(expected)
    # one uint64 array of every row (NULLs included in its size) and a batch: a whole fetch holds the column
    # twice or more (DuckDB's result, the fetched array, the masked array's compressed copy)
    assert peak < ROWS * 8 * 1.15


def test_repeats_and_the_flag_match_a_whole_fetch(con: duckdb.DuckDBPyConnection) -> None:
    whole = con.execute("SELECT h FROM t").fetchnumpy()["h"].compressed()
    values, counts = np.unique(whole, return_counts=True)
    repeated = rules.repeated_hashes(con, "SELECT h FROM t")
    assert sorted(repeated.column("h").to_pylist()) == sorted(values[counts > 1].tolist())
    assert repeated.num_rows == 100_000 - 100_000 // 5  # keys i % 100000 with i % 5 == 0 never get a hash
    assert rules._hash_column(con, "SELECT h, FALSE AS hit FROM t")[1] is False
    assert rules.repeated_hashes(con, "SELECT h FROM t WHERE h IS NULL").num_rows == 0
