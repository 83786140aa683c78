"""One comparison: for the same pair of runs, measure and cases, ``compare --run``, ``compare --runs``, ``report
--markdown`` and the gate's regression rule print the same mean difference, interval and p-value, digit for digit
(the JSON of each as floats, the text of each as the same figures formatted), on a file store of the sample
loaded by the CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.sample import sample_runs_path

runner = CliRunner()
pytestmark = pytest.mark.slow  # the sample loaded through the CLI, commands run on it
PAIR = ("hybrid-rerank", "bm25")


def _ok(*args: object) -> str:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code in (0, 1), res.output
    return res.output


def _pair(db: Path, command: str, flag: str, *extra: object) -> str:
    """``command --db DB FLAG candidate --baseline baseline EXTRA...``: the one pair every command is asked about."""
    return _ok(command, "--db", db, flag, PAIR[0], "--baseline", PAIR[1], *extra)


def _split(split: str | None) -> list[str]:
    return ["--split", split] if split else []


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cmp") / "store.duckdb"
    runs = [a for r in PAIR[::-1] for a in ("--run", sample_runs_path() / "runs" / r)]
    _ok("load", "--db", path, "--dataset", sample_runs_path() / "dataset", *runs)
    return path


def _one(db: Path, measure: str, split: str | None) -> dict[str, Any]:
    out = json.loads(_pair(db, "compare", "--run", "--metric", measure, "--format", "json", *_split(split)))
    row = next(r for r in out["rows"] if r["slice"] == "all")
    return {k: row[k] for k in ("mean_diff", "ci_low", "ci_high", "p_value", "n")}


def _runs(db: Path, measure: str, split: str | None, flag: str = "--runs") -> dict[str, Any]:
    out = json.loads(_pair(db, "compare", flag, "--measure", measure, "--format", "json", *_split(split)))
    row = next(r for r in out["table"] if r["run_id"] == PAIR[0])
    return {
        "mean_diff": row["delta"],
        "ci_low": row["delta_ci_low"],
        "ci_high": row["delta_ci_high"],
        "p_value": row["p_value"],
        "n": row["n"],
    }


def _gate(db: Path, tmp_path: Path, measure: str, split: str | None) -> dict[str, Any]:
    gate, out, where = tmp_path / "gate.toml", tmp_path / "verdict.json", split or "all"
    gate.write_text(
        f'[gate]\nsplit = "{where}"\n[[regression]]\nmetric = "{measure}"\ntolerance = 0.02\nsplit = "{where}"\n'
    )
    _pair(db, "gate", "--run", "--gate", gate, "--json", out, "--no-record", "--force")
    rule = next(r for r in json.loads(out.read_text())["rules"] if r["kind"] == "regression")
    return {**{k: rule[k] for k in ("ci_low", "ci_high", "p_value", "figure")}, "mean_diff": rule["value"]}


def _report_row(db: Path, tmp_path: Path, measure: str, split: str | None) -> list[str]:
    md = tmp_path / "report.md"
    _pair(db, "report", "--runs", "--measure", measure, "--markdown", md, "--force", *_split(split))
    line = next(x for x in md.read_text().splitlines() if x.startswith(f"| {PAIR[0]} |") and f"| {measure} |" in x)
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.parametrize(("measure", "split"), [("nDCG@10", None), ("R@10", "holdout"), ("AP", None)])
def test_every_command_prints_the_same_paired_figures(db: Path, tmp_path: Path, measure: str, split: str | None):
    one = _one(db, measure, split)
    many = _runs(db, measure, split)
    assert one == many  # floats, digit for digit
    assert one["n"] > 40 and one["ci_low"] < one["mean_diff"] < one["ci_high"]
    assert _runs(db, measure, split, flag="--run") == many  # --run with --measure: the same table
    if measure != "AP":  # the gate takes the fixed table's measures at a cutoff
        gate = _gate(db, tmp_path, measure, split)
        assert {k: gate[k] for k in ("mean_diff", "ci_low", "ci_high", "p_value")} == {
            k: one[k] for k in ("mean_diff", "ci_low", "ci_high", "p_value")
        }
        assert f"Δ {one['mean_diff']:+.4f} [95% CI {one['ci_low']:+.4f}, {one['ci_high']:+.4f}]" in gate["figure"]
        assert f"p = {one['p_value']:.4g}" in gate["figure"]
    cells = _report_row(db, tmp_path, measure, split)
    assert f"{one['mean_diff']:+.4f}" in cells
    assert f"[{one['ci_low']:+.4f}, {one['ci_high']:+.4f}]" in cells
    assert f"{one['p_value']:.4f}" in cells


def test_the_method_is_stated_once_with_both_resample_counts(db: Path) -> None:
    out = json.loads(_pair(db, "compare", "--run", "--metric", "nDCG@10", "--format", "json", "--resamples", "2000"))
    method = out["context"]["method"]
    assert "bootstrap interval of the mean Δ (1000 resamples)" in method
    assert "sign-flip) test, 2000 resamples unless exact" in method
    assert "resamples" not in out["context"]  # no second, unlabelled count beside it
    runs = json.loads(_pair(db, "compare", "--runs", "--measure", "nDCG@10", "--format", "json", "--resamples", "2000"))
    assert runs["method"].startswith(method)
    assert re.search(r"\d+ resamples", _pair(db, "compare", "--run"))
