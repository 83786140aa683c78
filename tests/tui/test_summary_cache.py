"""The metrics-summary cache: a hit skips metrics.summarize, a new load of the run is a miss (storing its
classification is not), and a cache that cannot be written or is switched off changes nothing but speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import ragtriage.app.browse.lists as data
from ragtriage.classify import refresh
from ragtriage.metrics import summary_cache
from ragtriage.store import connect

N_ROWS = 21  # metrics.summarize's default: 7 measures at k = 3, 5, 10


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real metrics.summarize, counting its calls."""
    calls: list[str] = []
    real = data.summarize

    def summarize(con: Any, run_id: str, *args: Any, **kw: Any) -> Any:
        calls.append(run_id)
        return real(con, run_id, *args, **kw)

    monkeypatch.setattr(data, "summarize", summarize)
    return calls


@pytest.mark.slow
def test_hit_skips_the_core_and_a_changed_store_recomputes(db_path: Path, counted: list[str]) -> None:
    con = connect(db_path, read_only=True)
    first = data.summary(con, "bm25", db_path)
    second = data.summary(con, "bm25", db_path)
    assert counted == ["bm25"]
    assert first.table.equals(second.table)
    assert first.context == second.context == "threshold=2 gain=linear unit=chunk stage=final"
    ndcg = [r for r in second.table.to_pylist() if r["name"] == "nDCG@10"]
    # bm25 per case at 10: q1 0.6309, q2 0, q3 0.6309, q10 0.7039 (hand-derived in test_responsiveness.py)
    assert ndcg[0]["n"] == 4 and ndcg[0]["mean"] == pytest.approx(0.491444, abs=1e-5)
    data.summary(con, "hybrid", db_path)
    assert counted == ["bm25", "hybrid"]  # the run id is part of the key
    con.close()
    con = connect(db_path)
    refresh(con)  # the classification stored after the load: neither the run nor the labels change
    con.close()
    con = connect(db_path, read_only=True)
    data.summary(con, "bm25", db_path)
    assert counted == ["bm25", "hybrid"]
    con.close()
    con = connect(db_path)
    con.execute("UPDATE runs SET loaded_at = loaded_at + INTERVAL 1 SECOND WHERE run_id = 'bm25'")  # a new load
    con.close()
    con = connect(db_path, read_only=True)
    data.summary(con, "bm25", db_path)
    assert counted == ["bm25", "hybrid", "bm25"]
    con.close()


@pytest.mark.slow
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
    assert not summary_cache.save(con, "bm25", pa.table({"name": ["nDCG@10"]}))
    assert data.summary(con, "bm25", db_path).table.num_rows == N_ROWS
    assert counted == ["bm25", "bm25", "bm25"]
    con.close()


@pytest.mark.slow
def test_a_corrupt_entry_is_a_miss(db_path: Path, counted: list[str], summary_cache_dir: Path) -> None:
    con = connect(db_path, read_only=True)
    data.summary(con, "bm25", db_path)
    (entry,) = summary_cache_dir.glob("*.summary.arrow")  # beside the per-case entry it was computed from
    entry.write_bytes(b"truncated")
    assert data.summary(con, "bm25", db_path).table.num_rows == N_ROWS
    assert counted == ["bm25", "bm25"]
    con.close()
