"""The shipped gate files against the shipped sample runs, through the real metrics, checks and classifier."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.factory import load_sample

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"
RUNS = ("bm25", "hybrid-rerank", "no-acl-filter")

pytestmark = pytest.mark.skipif(not (SAMPLE / "dataset").is_dir(), reason="sample_runs not generated")
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("sample") / "triage.duckdb", RUNS)


def _failed(junit: Path) -> set[str]:
    root = ET.parse(junit).getroot()
    return {str(c.get("name")) for c in root.iter("testcase") if c.find("failure") is not None}


@pytest.mark.slow
def test_release_gate_fails_the_best_run_for_its_real_defects(db: Path, tmp_path: Path) -> None:
    junit = tmp_path / "gate.xml"
    res = runner.invoke(
        app,
        [
            "gate",
            "--db",
            str(db),
            "--gate",
            str(SAMPLE / "gate.toml"),
            "--run",
            "hybrid-rerank",
            "--baseline",
            "bm25",
            "--junit",
            str(junit),
            "--no-record",
        ],
    )
    assert res.exit_code == 1, res.output
    assert _failed(junit) == {"slice_minimum:query_type=date:nDCG@10", "negative_cases", "latency"}
    assert "q094 [query_type=direct]" in res.output and "timed out" in res.output
    assert "q020 [query_type=date]" in res.output
    # the regression rule passes on its tolerance; its p-value is shown, not something the pass depended on
    reg = res.output.split("regression:nDCG@10:holdout:", 1)[1].splitlines()
    assert "p = 0.8113" in reg[0]
    assert reg[0].endswith("(needs mean ΔnDCG@10 ≥ -0.02, or a larger drop that is not significant (p ≥ 0.05))")
    assert (
        reg[1].strip()
        == "note: passed: Δ +0.0075 is within the tolerance (≥ -0.02); p = 0.8113 is reported, not required"
    )


@pytest.mark.slow
def test_ranking_gate_passes_the_best_run_and_fails_the_leaking_one_on_leakage_only(db: Path, tmp_path: Path) -> None:
    gate = str(SAMPLE / "gate-pass.toml")
    ok = runner.invoke(
        app, ["gate", "--db", str(db), "--gate", gate, "--run", "hybrid-rerank", "--baseline", "bm25", "--no-record"]
    )
    assert ok.exit_code == 0, ok.output
    junit = tmp_path / "leak.xml"
    bad = runner.invoke(
        app,
        [
            "gate",
            "--db",
            str(db),
            "--gate",
            gate,
            "--run",
            "no-acl-filter",
            "--baseline",
            "bm25",
            "--junit",
            str(junit),
            "--no-record",
        ],
    )
    assert bad.exit_code == 1
    assert _failed(junit) == {"leakage"}


@pytest.mark.slow
def test_a_gate_against_a_leaking_baseline_says_so_before_its_rules(db: Path, tmp_path: Path) -> None:
    md = tmp_path / "gate.md"
    args = ["gate", "--db", str(db), "--gate", str(SAMPLE / "gate-pass.toml"), "--run", "hybrid-rerank"]
    res = runner.invoke(app, [*args, "--baseline", "no-acl-filter", "--markdown", str(md), "--no-record"])
    lines = res.output.splitlines()
    first_rule = next(i for i, line in enumerate(lines) if line.startswith(("  pass  ", "  FAIL  ")))
    (said,) = [i for i, line in enumerate(lines) if "baseline no-acl-filter LEAKS" in line]
    assert said < first_rule, res.output
    assert "leaked result row(s), any stage" in lines[said]
    text = md.read_text()
    assert text.index("baseline no-acl-filter LEAKS") < text.index("| Rule | Result |")
    clean = runner.invoke(app, [*args, "--baseline", "bm25", "--no-record"])
    assert "LEAKS" not in clean.output  # said only of a baseline that leaks


@pytest.mark.slow
def test_compare_against_a_leaking_baseline_says_so_before_its_figures(db: Path) -> None:
    res = runner.invoke(
        app, ["compare", "--db", str(db), "--run", "hybrid-rerank", "--baseline", "no-acl-filter", "--k", "10"]
    )
    assert res.exit_code == 0, res.output
    said = res.output.index("baseline no-acl-filter FAILS: it leaks")
    assert said < res.output.index("nDCG@10")
