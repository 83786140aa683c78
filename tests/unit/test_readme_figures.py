"""sample_runs/README.md's leak figures are what `check` says on the shipped sample, so they cannot drift.

README.md and docs/ quote the CLI's own output, regenerated and checked by scripts/docs_figures.py
(tests/unit/test_docs_figures.py)."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from ragtriage.checks import check_run
from ragtriage.sample import sample_run_dirs, sample_runs_path
from ragtriage.store import connect, load_dataset, load_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path_factory.mktemp("readme") / "sample.duckdb")
    load_dataset(con, sample_runs_path() / "dataset")
    for run in sample_run_dirs():
        load_run(con, run)
    yield con
    con.close()


def _number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.slow
def test_sample_readme_table_leak_cell_matches(store: duckdb.DuckDBPyConnection) -> None:
    table = (sample_runs_path() / "README.md").read_text(encoding="utf-8")
    row = next(line for line in table.splitlines() if line.startswith("| no-acl-filter |"))
    m = re.search(r"\| ([\d,]+) / ([\d,]+) \((\d+) of (\d+) checked; (\d+) only", row)
    assert m is not None
    c = check_run(store, "no-acl-filter").counts()
    checked = store.execute("SELECT count(*) FROM cases").fetchall()[0][0] - c["unchecked_cases"]
    assert (c["leaked_result_rows"], c["leak_findings"], c["leaked_cases"]) == tuple(map(_number, m.groups()[:3]))
    assert (checked, c["candidate_only_leaked_cases"]) == (int(m[4]), int(m[5]))
