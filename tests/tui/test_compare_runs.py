"""The N-run Compare: one row per paired case with every run's value at the run's k and the open run's Δ, the
measure key, and the case screen opened from it with the runs' final lists side by side (`[`/`]` shift them);
a run loaded by a real second process while the app is open joins the run list and Compare.

Expected values are derived here from the conftest store's labels (grade >= 2 relevant, k = 2, linear gain,
log2(i + 1) discount), not read from the core.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from ragtriage.tui.screens.lists import CompareScreen
from tests.tui.helpers import pilot_test, settle, static_text, until

SECOND = 1 / math.log2(3)  # the discount at rank 2
# nDCG@2 per case and run: q1's grade-3 unit at rank 2 (bm25) or 1; q3's grade-2 unit at rank 2 (bm25, hybrid) or
# 1 (dense); q10's grade-3 unit first of two relevant units (grades 3 and 2: ideal 3 + 2/log2 3) for bm25 and
# hybrid, absent from dense
NDCG = {
    "q1": {"bm25": 3 * SECOND / 3, "hybrid": 1.0, "dense": 1.0},
    "q2": {"bm25": 0.0, "hybrid": 0.0, "dense": 1.0},
    "q3": {"bm25": 2 * SECOND / 2, "hybrid": 2 * SECOND / 2, "dense": 1.0},
    "q10": {"bm25": 3 / (3 + 2 * SECOND), "hybrid": 3 / (3 + 2 * SECOND), "dense": 0.0},
}
# P@2 divides by k: one relevant unit in the top 2 is 0.5
PRECISION = {
    "q1": {"bm25": 0.5, "hybrid": 0.5, "dense": 0.5},
    "q2": {"bm25": 0.0, "hybrid": 0.0, "dense": 0.5},
    "q3": {"bm25": 0.5, "hybrid": 0.5, "dense": 0.5},
    "q10": {"bm25": 0.5, "hybrid": 0.5, "dense": 0.0},
}


def rows_of(app: TriageApp) -> dict[str, dict[str, Any]]:
    screen = app.screen
    assert isinstance(screen, CompareScreen) and screen.shown is not None
    # a leaking run's column is named "RUN LEAKS" (bm25 and hybrid leak q3): the figures are read by run id
    return {r["case_id"]: {k.removesuffix(" LEAKS"): v for k, v in r.items()} for r in screen.shown.to_pylist()}


def check(rows: dict[str, dict[str, Any]], expected: dict[str, dict[str, float]]) -> None:
    assert set(rows) == set(expected)  # q4 has no relevant unit: not paired
    for case, by_run in expected.items():
        for run, value in by_run.items():
            assert rows[case][run] == pytest.approx(value, abs=1e-12), (case, run)
        assert rows[case]["Δ"] == pytest.approx(by_run["hybrid"] - by_run["bm25"], abs=1e-12)


@pytest.mark.slow
@pilot_test
async def test_every_run_of_the_dataset_is_a_column_and_m_cycles_the_measure(three_runs_db: Path) -> None:
    app = TriageApp(three_runs_db, "hybrid", "bm25", author="t")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.shown is not None
        assert screen.shown.column_names == ["case_id", "bm25 LEAKS", "hybrid LEAKS", "Δ", "dense", "query"]
        assert "bm25 FAILS" in static_text(app, "#verdicts") and "checked: dense" in static_text(app, "#verdicts")
        check(rows_of(app), NDCG)
        # worst regression of the open run first: only q1 moved (up), so it comes last
        assert screen.shown.column("case_id").to_pylist()[-1] == "q1"
        assert "hybrid vs bm25 · nDCG@2" in static_text(app, "#status")
        assert "1/3/0" in next(x for x in static_text(app, "#stats").splitlines() if x.startswith("nDCG@2"))
        await pilot.press("m", "down", "enter")  # nDCG → P
        await settle(pilot)
        assert "hybrid vs bm25 · P@2" in static_text(app, "#status")
        check(rows_of(app), PRECISION)


@pytest.mark.slow
@pilot_test
async def test_enter_shows_the_runs_final_lists_side_by_side_and_brackets_shift_them(three_runs_db: Path) -> None:
    app = TriageApp(three_runs_db, "hybrid", "bm25", author="t")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        ids = app.screen.shown.column("case_id").to_pylist()  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen) and app.screen.case_id == ids[0]
        side = static_text(app, "#sec-runs")
        # two panels fit at 80 columns: the open run and the baseline
        assert "runs 1-2 of 3" in side and "hybrid" in side and "bm25" in side and "dense" not in side
        await pilot.press("right_square_bracket")
        await settle(pilot)
        side = static_text(app, "#sec-runs")
        assert "runs 2-3 of 3" in side and "dense" in side and "hybrid" not in side.split("\n", 2)[-1]
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert "runs 1-2 of 3" in static_text(app, "#sec-runs")
        await pilot.press("n")  # the next case of the Compare list, still side by side
        await settle(pilot)
        assert app.screen.case_id == ids[1] and "runs 1-2 of 3" in static_text(app, "#sec-runs")


@pytest.mark.slow
@pilot_test
async def test_a_case_opened_from_another_list_has_no_side_by_side(three_runs_db: Path) -> None:
    app = TriageApp(three_runs_db, "hybrid", "bm25", author="t")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CaseScreen)
        assert not app.screen.query_one("#sec-runs").display


@pytest.mark.slow
@pilot_test
async def test_a_run_loaded_by_another_process_joins_the_open_app(db_path: Path, tmp_path: Path) -> None:
    import asyncio
    import subprocess
    import sys

    from tests.factory import write_run
    from tests.tui.conftest import DENSE_RESULTS

    ranked = [{**r, "rank": 1} for r in DENSE_RESULTS]
    run_dir = write_run(tmp_path / "dense", {"run_id": "dense", "k": 2, "candidate_k": 5}, ranked, None)
    app = TriageApp(db_path, "hybrid", "bm25", author="t")
    # every notification is kept: the app may see the run before the loading process ends (it still writes the
    # overview caches then), and a toast shown 8 s earlier has left app._notifications on a busy machine
    seen: list[str] = []
    notify = app.notify

    def record(message: str, **kwargs: Any) -> None:
        seen.append(str(message))
        notify(message, **kwargs)

    app.notify = record  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.runs == ["bm25", "hybrid"]
        load = [sys.executable, "-m", "ragtriage.cli", "--wait", "load", "--db", str(db_path), "--run", str(run_dir)]
        done = await asyncio.to_thread(subprocess.run, load, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        await until(lambda: "dense" in app.runs)  # the app polls the store every few seconds
        assert app.runs == ["bm25", "dense", "hybrid"]
        assert any("new run(s) loaded: dense" in m for m in seen)
        await pilot.press("c")
        await settle(pilot)
        assert app.screen.shown.column_names == ["case_id", "bm25 LEAKS", "hybrid LEAKS", "Δ", "dense", "query"]  # type: ignore[attr-defined]


def _cli_rows(db: Path, *args: str) -> list[dict[str, Any]]:
    import json

    from typer.testing import CliRunner

    from ragtriage.cli import app as cli

    res = CliRunner().invoke(cli, ["compare", "--db", str(db), "--baseline", "bm25", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    return list(json.loads(res.stdout)["rows"])


@pytest.mark.slow
@pilot_test
async def test_figures_equal_the_compare_command_on_the_sample(tmp_path: Path) -> None:
    """Compare's figures are ``compare``'s: on the sample at --k 8 (not the run's k), every field of every row,
    over all cases and per query_type (`d`), is what ``ragtriage compare --format json`` says for the same pair;
    at 80x24 the shown measure's line states its mean Δ, interval and p, and no line is cut."""
    from tests.factory import load_sample

    db = load_sample(tmp_path / "s.duckdb")
    overall = _cli_rows(db, "--run", "hybrid-rerank", "--k", "8")
    sliced = _cli_rows(db, "--run", "hybrid-rerank", "--k", "8", "--by", "query_type")
    app = TriageApp(db, "hybrid-rerank", "bm25", author="t", k=8)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.stats is not None
        assert screen.stats.to_pylist() == overall
        lines = static_text(app, "#stats").splitlines()
        ndcg = next(r for r in overall if r["metric"] == "nDCG@8")
        line = next(x for x in lines if x.split()[:1] == ["nDCG@8"])
        wtl = f"{ndcg['wins']}/{ndcg['ties']}/{ndcg['losses']}"
        delta, low, high = (f"{ndcg[c]:+.3f}" for c in ("mean_diff", "ci_low", "ci_high"))
        assert line.split() == [
            "nDCG@8",
            str(ndcg["n"]),
            wtl,
            f"{ndcg['baseline']:.3f}",
            f"{ndcg['candidate']:.3f}",
            delta,
            f"[{low},",
            f"{high}]",
            f"{ndcg['p_value']:.3g}",
        ]
        assert len(lines) == 7 and all(len(x.rstrip()) <= 78 for x in lines)  # the header and six measures
        await pilot.press("d")  # by query_type
        await settle(pilot)
        assert screen.stats.to_pylist() == sliced
        shown = static_text(app, "#stats").splitlines()
        slices = [r for r in sliced if r["metric"] == "nDCG@8"]
        assert len(shown) == 1 + len(slices) and shown[1].split()[0] == "all"
        deltas = [float(x.split()[5]) for x in shown[2:]]
        assert deltas == sorted(deltas)  # worst slice first


@pytest.mark.slow
@pilot_test
async def test_measure_picker_and_the_users_k(tmp_path: Path) -> None:
    """`m` opens a picker on the current measure; the one picked is listed at the k given (``tui --k 20``), which
    the figures and the bar state."""
    from textual.widgets import OptionList

    from tests.factory import load_sample

    db = load_sample(tmp_path / "s.duckdb")
    app = TriageApp(db, "hybrid-rerank", "bm25", author="t", k=20)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert "nDCG@20" in static_text(app, "#status")
        assert {x.split()[0] for x in static_text(app, "#stats").splitlines()[1:]} == {
            f"{m}@20" for m in ("P", "R", "RR", "nDCG", "AP", "Success")
        }
        await pilot.press("m")
        await settle(pilot)
        options = app.screen.query_one(OptionList)
        assert options.highlighted == 0  # nDCG, the current one
        await pilot.press("down", "down", "enter")  # nDCG → P → R
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.view is not None
        assert screen.view.measure == "R@20"
        assert "hybrid-rerank vs bm25 · R@20" in static_text(app, "#status")
