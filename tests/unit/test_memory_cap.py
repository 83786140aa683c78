"""A load on a file store runs under DuckDB memory cap (store/memory_cap.py), and the cap changes nothing it
stores: a load under a cap far below what its queries would take spills and gives the same rows and warnings."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ragtriage.store import connect, load_inputs
from ragtriage.store.byo import LoadRequest
from ragtriage.store.memory_cap import LOAD_LIMIT


def _files(root: Path, cases: int = 20_000, depth: int = 100) -> tuple[Path, Path]:
    """TREC qrels and a run whose lists repeat documents (the duplicate-in-list check then finds work)."""
    con = duckdb.connect()
    qrels, run = root / "qrels.txt", root / "run.trec"
    con.execute(f"""COPY (SELECT 'q' || (i // 3), 0, 'd' || ((i // 3) * 7 + i % 3 * 5), CAST(i % 4 AS INTEGER)
                          FROM range({cases * 3}) t(i)) TO '{qrels}' (FORMAT csv, DELIMITER ' ', HEADER false)""")
    con.execute(f"""COPY (SELECT 'q' || (i // {depth}), 'Q0', 'd' || ((i // {depth}) * 7 + (i % {depth}) * 2 % 150),
                                 i % {depth} + 1, round(100.0 - (i % {depth}) * 0.5, 2), 'tag'
                          FROM range({cases * depth}) t(i))
                    TO '{run}' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')""")
    return qrels, run


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def test_the_load_runs_under_the_cap_and_gives_the_default_back(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path, cases=50)
    con = connect(tmp_path / "s.duckdb")
    default = _limit(con)
    seen: list[str] = []
    load_inputs(con, LoadRequest(qrels=qrels, runs=[run]), lambda _: seen.append(_limit(con)))
    assert seen and set(seen) == {f"{LOAD_LIMIT / (1 << 30):.1f} GiB"}
    assert _limit(con) == default
    mem = connect(":memory:")  # nowhere to spill but the working directory: not capped
    seen.clear()
    load_inputs(mem, LoadRequest(qrels=qrels, runs=[run]), lambda _: seen.append(_limit(mem)))
    assert set(seen) == {default}


def test_a_load_under_a_tiny_cap_spills_and_stores_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtriage.store import byo, memory_cap

    qrels, run = _files(tmp_path)
    stored = []
    for name, limit in (("free", LOAD_LIMIT), ("tight", 64 << 20)):
        monkeypatch.setattr(byo, "capped", lambda con, limit=limit: memory_cap.capped(con, limit))
        con = connect(tmp_path / f"{name}.duckdb")
        seen: list[str] = []
        summary = load_inputs(con, LoadRequest(qrels=qrels, runs=[run]), lambda _, c=con, s=seen: s.append(_limit(c)))
        rows = con.execute("SELECT count(*), sum(hash(case_id, unit_id, rank, score, line)) FROM results").fetchall()
        warnings = sorted((w.code, w.line, w.message) for w in summary.runs[0].warnings)
        stored.append((rows, warnings))
        assert set(seen) == {f"{limit / (1 << 20):.1f} MiB" if limit < 1 << 30 else "1.0 GiB"}
    assert stored[0] == stored[1]
    assert stored[0][0][0][0] == 2_000_000 and any(code == "duplicate-in-list" for code, _, _ in stored[0][1])


def test_a_machine_smaller_than_the_cap_keeps_duckdbs_own_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtriage.store import memory_cap

    qrels, run = _files(tmp_path, cases=50)
    con = connect(tmp_path / "s.duckdb")
    default = _limit(con)
    seen: list[str] = []
    monkeypatch.setattr(memory_cap, "_default_limit", lambda: LOAD_LIMIT // 2)  # the cap would raise the limit
    load_inputs(con, LoadRequest(qrels=qrels, runs=[run]), lambda _: seen.append(_limit(con)))
    assert set(seen) == {default}
    seen.clear()
    monkeypatch.setattr(memory_cap, "_default_limit", lambda: None)  # the platform does not say: capped
    load_inputs(con, LoadRequest(runs=[run], replace=True), lambda _: seen.append(_limit(con)))
    assert set(seen) == {"1.0 GiB"} and _limit(con) == default
