"""The per-case cache `ragtriage load` fills: compare and the gate read it, it gives the figures a computation
gives, and a store that changed is never answered from an old entry."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ragtriage.gate import sources
from ragtriage.gate.compare import compare
from ragtriage.metrics import summary_cache
from ragtriage.metrics.per_case import per_case
from ragtriage.store import connect
from tests.factory import SAMPLE, load_sample

pytestmark = pytest.mark.skipif(not (SAMPLE / "dataset").is_dir(), reason="sample_runs not generated")
RUNS = ("bm25", "hybrid-rerank")


def _store(tmp_path: Path) -> Path:
    db = load_sample(tmp_path / "s.duckdb", RUNS)
    assert summary_cache.warm(db) == sorted(RUNS)
    return db


@pytest.mark.slow
def test_cached_per_case_equals_the_computed_one_at_every_subset_of_cutoffs(
    tmp_path: Path, summary_cache_dir: Path
) -> None:
    db = _store(tmp_path)
    con = connect(db, read_only=True)
    try:
        for ks in [(10,), (3, 10), (3, 5, 10)]:
            cached = summary_cache.per_case_columns(con, "bm25", ks)
            assert cached is not None
            assert cached.equals(per_case(con, "bm25", ks, counts=False))
        assert summary_cache.per_case_columns(con, "bm25", (20,)) is None  # not a cached cutoff: computed
    finally:
        con.close()
    assert list(summary_cache_dir.glob("*.per-case.arrow"))


@pytest.mark.slow
def test_compare_reads_the_entry_until_the_run_or_the_labels_change(tmp_path: Path, summary_cache_dir: Path) -> None:
    from ragtriage.store import load_run

    db = _store(tmp_path)
    con = connect(db, read_only=True)
    try:
        computed = compare(con, "hybrid-rerank", "bm25", (10,)).row("nDCG@10")
        key = summary_cache.per_case_key(con, "bm25")
        assert key is not None
        entry = summary_cache.read_entry(key)
        assert entry is not None
        # an entry that says every bm25 case scored 0: compare must now report hybrid-rerank's mean as the gain
        col = entry.schema.get_field_index("nDCG@10")
        zeros = pc.multiply(entry.column(col), pa.scalar(0.0))
        assert summary_cache.write_entry(key, entry.set_column(col, "nDCG@10", zeros), compressed=True)
        read = compare(con, "hybrid-rerank", "bm25", (10,)).row("nDCG@10")
        assert read["baseline"] == 0.0
        assert read["mean_diff"] == pytest.approx(computed["candidate"])
        assert sources.per_case(con, "bm25", (10,)).column("nDCG@10").to_pylist() == zeros.to_pylist()
    finally:
        con.close()
    # another run loaded: bm25's labels and rows are what they were, so its entry is still read
    load_sample(db, ("no-acl-filter",))
    con = connect(db, read_only=True)
    try:
        assert summary_cache.per_case_key(con, "bm25") == key
        assert compare(con, "hybrid-rerank", "bm25", (10,)).row("nDCG@10")["baseline"] == 0.0
    finally:
        con.close()
    # bm25 loaded again (--replace): a new key, so the doctored entry is never read for the new rows
    con = connect(db)
    try:
        load_run(con, SAMPLE / "runs" / "bm25", replace=True)
        assert summary_cache.per_case_key(con, "bm25") != key
        assert compare(con, "hybrid-rerank", "bm25", (10,)).row("nDCG@10") == computed
    finally:
        con.close()


@pytest.mark.slow
def test_a_miss_is_computed_once_and_kept_for_the_next_compare(
    tmp_path: Path, summary_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose entries are gone (loaded by another version, a cache emptied): the first compare computes
    both runs' per-case tables and keeps them; the next one reads them, and the kept table is the computed one."""
    db = load_sample(tmp_path / "s.duckdb", RUNS)  # no warm(): nothing cached
    con = connect(db, read_only=True)
    try:
        assert summary_cache.per_case_columns(con, "bm25", (10,)) is None
        first = compare(con, "hybrid-rerank", "bm25", (10,)).row("nDCG@10")
        kept = summary_cache.per_case_columns(con, "bm25", (3, 5, 10))
        assert kept is not None and kept.equals(per_case(con, "bm25", (3, 5, 10), counts=False))
        assert summary_cache.per_case_columns(con, "hybrid-rerank", (10,)) is not None
        # the next compare reads the entry: nothing recomputes it
        module = sys.modules["ragtriage.metrics.per_case"]  # the package's name `per_case` is the function

        def recompute(*_: object, **__: object) -> None:
            raise AssertionError("per-case values recomputed on a kept entry")

        monkeypatch.setattr(module, "per_case_context", recompute)
        assert compare(con, "hybrid-rerank", "bm25", (10,)).row("nDCG@10") == first
        monkeypatch.undo()
        # a cutoff the entry cannot hold is computed and keeps nothing more
        entries = sorted(summary_cache_dir.glob("*.per-case.arrow"))
        assert len(entries) == 2
        assert sources.per_case(con, "bm25", (20,)).equals(per_case(con, "bm25", (20,), counts=False))
        assert sorted(summary_cache_dir.glob("*.per-case.arrow")) == entries
    finally:
        con.close()


@pytest.mark.slow
def test_with_the_cache_off_a_miss_is_computed_and_nothing_is_written(
    tmp_path: Path, summary_cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = load_sample(tmp_path / "s.duckdb", RUNS)
    monkeypatch.setenv(summary_cache.CACHE_ENV, "off")
    con = connect(db, read_only=True)
    try:
        assert summary_cache.per_case_kept(con, "bm25", (10,)) is None
        assert sources.per_case(con, "bm25", (10,)).equals(per_case(con, "bm25", (10,), counts=False))
    finally:
        con.close()
    assert not summary_cache_dir.exists() or not list(summary_cache_dir.iterdir())


@pytest.mark.slow
def test_load_keeps_the_first_slices_of_a_run_at_a_cached_cutoff_and_the_tui_reads_them(
    tmp_path: Path, summary_cache_dir: Path
) -> None:
    """bm25 is judged at k=10 (a cached cutoff), hybrid-rerank at k=8 (not one: its slices are computed when asked).
    The kept table is the computed one; a kept table is what the TUI's Slices view shows."""
    from ragtriage.app.browse import lists as data
    from ragtriage.app.browse.reads import RunCache
    from ragtriage.metrics.slices import slices

    db = _store(tmp_path)
    con = connect(db, read_only=True)
    try:
        kept = summary_cache.cached_slices(con, "bm25", "query_type", (3, 5, 10), 10)
        assert kept is not None and kept.num_rows >= 2
        assert kept.equals(slices(con, "bm25", "query_type", (3, 5, 10), k=10))
        assert summary_cache.cached_slices(con, "bm25", "query_type", (3, 5, 10), 5) is None  # another question
        assert summary_cache.cached_slices(con, "bm25", "language", (3, 5, 10), 10) is None
        assert summary_cache.cached_slices(con, "hybrid-rerank", "query_type", (3, 5, 8, 10), 8) is None
        key = summary_cache.slices_key(con, "bm25", "query_type", (3, 5, 10), 10)
        assert key is not None
        # a kept table whose first slice is renamed: the TUI shows the kept table, so it read it
        names = kept.column("slice_value").to_pylist()
        doctored = kept.set_column(
            kept.schema.get_field_index("slice_value"), "slice_value", pa.array(["kept", *names[1:]])
        )
        assert summary_cache.write_entry(key, doctored, compressed=True)
        shown = data.slices(con, "bm25", "query_type", RunCache()).table.column("slice_value").to_pylist()
        assert shown == ["kept", *names[1:]]
        computed = data.slices(con, "hybrid-rerank", "query_type", RunCache()).table
        assert (
            computed.column("slice_value").to_pylist()
            == slices(con, "hybrid-rerank", ks=(3, 5, 8, 10), k=8).column("slice_value").to_pylist()
        )
    finally:
        con.close()


def test_the_cache_folder_keeps_its_newest_entries_within_its_limit(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "cache"
    folder.mkdir()
    for i in range(5):
        entry = folder / f"e{i}.arrow"
        entry.write_bytes(b"x" * 100)
        os.utime(entry, ns=(i * 10**9, i * 10**9))
    newest = folder / "e4.arrow"
    assert summary_cache.prune(folder, keep=newest, limit=250) == 3
    assert sorted(p.name for p in folder.iterdir()) == ["e3.arrow", "e4.arrow"]
    os.utime(newest, ns=(0, 0))  # the entry just written stays even when it is the oldest
    assert summary_cache.prune(folder, keep=newest, limit=100) == 1
    assert [p.name for p in folder.iterdir()] == ["e4.arrow"]
