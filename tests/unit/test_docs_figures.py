"""Every command output quoted in README.md and docs/ is what the tool prints on the bundled sample
(scripts/docs_figures.py): a change that moves a quoted figure fails here until the docs are regenerated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "docs_figures.py"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


@pytest.mark.slow
def test_quoted_outputs_are_current_and_a_changed_figure_is_named(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- ragtriage:begin metrics -->")
    line = readme.count("\n", 0, start) + 1
    figure = readme.index("0.7179", start)  # hybrid-rerank's nDCG@10 on the sample, in the metrics block
    stale = tmp_path / "stale.md"
    stale.write_text(readme[:figure] + "0.7180" + readme[figure + 6 :], encoding="utf-8")
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    res = run("--check", *docs, stale)  # one load of the sample for every file
    assert res.returncode == 1, res.stdout + res.stderr
    named = [ln.strip() for ln in res.stderr.splitlines()[1:]]
    assert named == [f"{stale}:{line}: metrics"], res.stderr + "\n(regenerate with: python scripts/docs_figures.py)"


def test_a_block_that_quotes_another_program_is_refused_with_its_line(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# x\n\n<!-- ragtriage:begin ls -->\n```console\n$ ls -l\n```\n<!-- ragtriage:end -->\n")
    res = run("--check", doc)
    assert res.returncode == 2
    assert res.stderr.strip() == f"{doc}:5: a quoted command must run ragtriage, not ['ls']"


def test_a_block_without_its_end_marker_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- ragtriage:begin metrics -->\n```console\n$ ragtriage metrics --db triage.duckdb\n```\n")
    res = run(doc)
    assert res.returncode == 2
    assert res.stderr.strip() == f"{doc}:1: block metrics has no `<!-- ragtriage:end -->`"


def test_only_head_or_tail_may_follow_a_quoted_command(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- ragtriage:begin x -->\n```console\n$ ragtriage info | grep run\n```\n<!-- ragtriage:end -->\n")
    res = run("--check", doc)
    assert res.returncode == 2
    assert "only `| head -n N` or `| tail -n N` may follow a quoted command" in res.stderr
