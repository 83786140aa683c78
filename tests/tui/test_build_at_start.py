"""`ragtriage tui --qrels --run` on files not cached yet: the app starts at once, shows the load's progress while a
worker writes the store (keys other than quit do nothing then), and opens the Overview when it is written; the
metric table shows its means before its bootstrap intervals; a bad input ends the app with the load's own error,
and the store is not left behind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import ragtriage.app.browse.lists as data
from ragtriage.contract.errors import ValidationFailed
from ragtriage.loading import cached_store, cached_store_path
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.modals import BuildingScreen
from ragtriage.tui.screens.overview import OverviewScreen, summary_table
from tests.tui.helpers import pilot_test, plain, settle, static_text, until

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\nq2 0 d4 3\n"
# nDCG@10 (linear gain), q1: d2 (grade 0) then d1 (grade 2): 2/log2(3) / 2 = 0.6309; q2: d4 (grade 3) alone, d3
# (grade 1) never listed: 3 / (3 + 1/log2(3)) = 0.8262
RUN = "q1 Q0 d2 1 2.5 a\nq1 Q0 d1 2 1.25 a\nq2 Q0 d4 1 0.5 a\n"


@dataclass(frozen=True)
class Load:
    req: LoadRequest
    target: Path
    what: str = "qrels.txt, a.run"

    def __call__(self, progress: Callable[[str], None]) -> object:
        return cached_store(self.req, progress=progress, target=self.target)


def _load(tmp_path: Path, run: str = RUN) -> Load:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "a.run").write_text(run)
    req = LoadRequest(qrels=tmp_path / "qrels.txt", runs=[RunSource(tmp_path / "a.run")])
    return Load(req, cached_store_path(req, tmp_path / "stores"))


@pilot_test
async def test_the_app_loads_the_files_then_opens_the_overview(tmp_path: Path, summary_cache_dir: Path) -> None:
    load = _load(tmp_path)
    assert not load.target.exists()
    app = TriageApp(load.target, build=load)
    async with app.run_test() as pilot:
        assert isinstance(app.screen, BuildingScreen)
        assert "loading qrels.txt, a.run into a cached store" in static_text(app, "#building")
        await pilot.press("f")  # no view reads a store being written
        await until(lambda: isinstance(app.screen, OverviewScreen))
        await settle(pilot)
        assert app.run_id == "a" and app.runs == ["a"] and load.target.exists()
        table = static_text(app, "#sec-summary")
        ndcg = next(line for line in table.splitlines() if line.startswith("nDCG@10"))
        assert ndcg.split()[1] == "0.7286"  # (0.6309 + 0.8262) / 2
        assert "…" not in table  # the intervals followed the means
    con = connect(load.target, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM results").fetchall()[0][0] == 3
    finally:
        con.close()


@pilot_test
async def test_a_bad_input_ends_the_app_with_the_loads_error(tmp_path: Path) -> None:
    load = _load(tmp_path, RUN + "q2 Q0 d3 2 nan a\n")
    app = TriageApp(load.target, build=load)
    async with app.run_test() as pilot:
        await until(lambda: app.build_error is not None)
        await pilot.pause()
    assert isinstance(app.build_error, ValidationFailed) and "a.run:4" in str(app.build_error)
    assert app.return_code == 2 and not load.target.exists()
    assert [p.name for p in load.target.parent.iterdir() if p.suffix == ".duckdb"] == []


@pytest.mark.slow
def test_the_means_come_before_the_intervals(db_path: Path, summary_cache_dir: Path) -> None:
    con = connect(db_path, read_only=True)
    try:
        quick = data.summary(con, "bm25", db_path, interval=False)
        assert quick.interval_pending and list(summary_cache_dir.glob("*.summary.arrow")) == []  # not kept
        full = data.summary(con, "bm25", db_path)
    finally:
        con.close()
    assert not full.interval_pending and list(summary_cache_dir.glob("*.summary.arrow"))
    rows = quick.table.to_pylist()
    assert [r["mean"] for r in rows] == [r["mean"] for r in full.table.to_pylist()]
    assert all(r["ci_low"] is None and r["ci_high"] is None for r in rows)
    shown = plain(summary_table(quick.table, interval_pending=True))
    assert "…" in shown.splitlines()[1] and "—" not in shown
