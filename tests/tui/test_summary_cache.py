"""The metrics-summary cache: a hit skips metrics.summarize, any change to the store file is a miss, and a cache
that cannot be written or is switched off changes nothing but speed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import ragtriage.tui.data as data
from ragtriage.metrics import summary_cache
from ragtriage.store import connect

ROWS = [{"name": "nDCG@10", "mean": 0.25, "median": 0.5, "p10": 0.0, "n": 4, "threshold": 2, "gain": "exponential"}]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def summarize(con: Any, run_id: str, **_: Any) -> pa.Table:
        calls.append(run_id)
        return pa.Table.from_pylist(ROWS)

    real = data.core_function
    monkeypatch.setattr(
        data, "core_function", lambda m, n: summarize if (m, n) == ("metrics", "summarize") else real(m, n)
    )
    return calls


def test_hit_skips_the_core_and_a_changed_store_recomputes(db_path: Path, counted: list[str]) -> None:
    con = connect(db_path, read_only=True)
    first = data.summary(con, "bm25", db_path)
    second = data.summary(con, "bm25", db_path)
    assert counted == ["bm25"]
    assert first[0].equals(second[0]) and first[1] == second[1] == "threshold=2 gain=exponential"
    assert second[0].to_pylist() == [{"name": "nDCG@10", "mean": 0.25, "median": 0.5, "p10": 0.0, "n": 4}]
    data.summary(con, "hybrid", db_path)
    assert counted == ["bm25", "hybrid"]  # the run id is part of the key
    con.close()
    st = db_path.stat()
    os.utime(db_path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # what a new load does to the file
    con = connect(db_path, read_only=True)
    data.summary(con, "bm25", db_path)
    assert counted == ["bm25", "hybrid", "bm25"]
    con.close()


def test_off_and_unwritable_cache_still_answer(
    db_path: Path, counted: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = connect(db_path, read_only=True)
    monkeypatch.setenv(summary_cache.CACHE_ENV, "off")
    assert summary_cache.cache_dir() is None
    data.summary(con, "bm25", db_path)
    data.summary(con, "bm25", db_path)
    assert counted == ["bm25", "bm25"]
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(summary_cache.CACHE_ENV, str(blocker / "cache"))
    assert not summary_cache.save(db_path, "bm25", pa.Table.from_pylist(ROWS))
    assert data.summary(con, "bm25", db_path)[0].num_rows == 1
    assert counted == ["bm25", "bm25", "bm25"]
    con.close()


def test_a_corrupt_entry_is_a_miss(db_path: Path, counted: list[str], summary_cache_dir: Path) -> None:
    con = connect(db_path, read_only=True)
    data.summary(con, "bm25", db_path)
    (entry,) = summary_cache_dir.iterdir()
    entry.write_bytes(b"truncated")
    assert data.summary(con, "bm25", db_path)[0].num_rows == 1
    assert counted == ["bm25", "bm25"]
    con.close()
