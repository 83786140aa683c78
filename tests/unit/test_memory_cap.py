"""A load on a file store runs under DuckDB memory cap (store/memory_cap.py), and the cap changes nothing it
stores: a load under a cap far below what its queries would take spills and gives the same rows and warnings. The
classification a load stores runs under the cap too, and an evaluation without a store is capped for its whole
life, spilling to a folder of its own that goes when it closes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import pytest

from ragtriage.store import connect, load_inputs
from ragtriage.store.byo import LoadRequest
from ragtriage.store.memory_cap import LOAD_LIMIT
from tests.trec_fixtures import Files


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
    mem = connect(":memory:")  # the load leaves an in-memory store's limit to its maker (cap_in_memory)
    own = _limit(mem)
    seen.clear()
    load_inputs(mem, LoadRequest(qrels=qrels, runs=[run]), lambda _: seen.append(_limit(mem)))
    assert set(seen) == {own}


@pytest.mark.slow
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


def test_the_classification_a_load_stores_runs_under_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from ragtriage.classify import refresh

    qrels, run = _files(tmp_path, cases=50)
    con = connect(tmp_path / "s.duckdb")
    default = _limit(con)
    load_inputs(con, LoadRequest(qrels=qrels, runs=[run]))
    module = sys.modules["ragtriage.classify.chunked"]
    seen: list[str] = []
    real = module._store_chunk
    monkeypatch.setattr(module, "_store_chunk", lambda c, *a, **kw: (seen.append(_limit(c)), real(c, *a, **kw))[1])
    assert refresh(con) == ["tag"]
    assert seen and set(seen) == {"1.0 GiB"} and _limit(con) == default  # every chunk stored under the cap


@pytest.mark.slow
def test_an_evaluation_without_a_store_spills_to_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtriage.metrics.measure_eval import evaluate_run
    from ragtriage.store import load_memory, memory_cap

    qrels, _ = _files(tmp_path)
    run = tmp_path / "clean.trec"  # no document twice in a list: the light path reads it
    duckdb.execute(f"""COPY (SELECT 'q' || (i // 100), 'Q0', 'd' || ((i // 100) * 7 + i % 100), i % 100 + 1,
                                    100.0 - (i % 100), 'tag' FROM range(2000000) t(i))
                       TO '{run}' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')""")
    figures = []
    for limit in (LOAD_LIMIT, 64 << 20):  # 2M rows: about 80 MB of run
        monkeypatch.setattr(load_memory, "cap_in_memory", lambda con, limit=limit: memory_cap.cap_in_memory(con, limit))
        light = load_memory.light_store(qrels, run)
        assert light is not None
        con, run_id, _ = light
        folder = Path(str(con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]))
        assert folder.name.startswith("ragtriage-spill-") and str(folder.parent) == tempfile.gettempdir()
        res = evaluate_run(con, run_id, ["nDCG@10", "AP", "P@5"])
        figures.append(res.aggregate.select(["measure", "value", "n"]).to_pylist())
        assert _limit(con) == (f"{limit / (1 << 20):.1f} MiB" if limit < 1 << 30 else "1.0 GiB")
        spilled = folder.exists() and any(folder.iterdir())
        assert spilled == (limit < 1 << 30)
        con.close()
        assert not folder.exists()  # DuckDB removes the folder it made
    assert figures[0] == figures[1] and figures[0][0]["n"] == 20_000


def test_a_compressed_file_the_general_reader_reads_loads_under_the_cap(tmp_path: Path, trec_files: Files) -> None:
    """Gzipped TREC files with tabs and space-padded fields take the general reader, whose read buffer once was
    1 GiB: a load under the 1 GiB cap refused them ("could not allocate block of size 1.0 GiB")."""
    con = connect(tmp_path / "s.duckdb")
    seen: list[str] = []
    request = LoadRequest(qrels=trec_files("graded.gz"), runs=[trec_files("run.gz")])
    summary = load_inputs(con, request, lambda _: seen.append(_limit(con)))
    assert set(seen) == {"1.0 GiB"}
    full = trec_files.full
    assert summary.runs[0].rows == {"results": sum(1 for line in full.lines if line[0] in full.qrels)}
    assert con.execute("SELECT count(*) FROM labels").fetchall()[0][0] == sum(map(len, full.qrels.values()))


def test_every_connection_to_a_file_store_runs_under_the_cap(tmp_path: Path) -> None:
    # the commands that only read a store (metrics, compare, report, gate, the TUI) open it through connect too
    db = tmp_path / "s.duckdb"
    connect(db).close()
    for read_only in (False, True):
        con = connect(db, read_only=read_only)
        assert _limit(con) == f"{LOAD_LIMIT / (1 << 30):.1f} GiB"
        con.close()
    assert _limit(connect(":memory:")) == _limit(duckdb.connect())  # an in-memory store is its maker's to cap


def test_the_pool_runs_under_the_store_cap(tmp_path: Path) -> None:
    """The pool numbers by windows only the lists that need it (store.dedup.positions_within), so it runs under
    the store's cap and leaves it as it found it (judge --fill goes on with the same connection)."""
    from ragtriage.annotate.pool import build_pool
    from tests.factory import load_sample

    db = load_sample(tmp_path / "s.duckdb", ("bm25", "dense"))
    con = connect(db)
    try:
        capped_before = _limit(con)
        assert capped_before == f"{LOAD_LIMIT / (1 << 30):.1f} GiB"
        pool = build_pool(con, ["bm25", "dense"], 5)
        assert pool.num_rows > 0
        assert _limit(con) == capped_before
    finally:
        con.close()
