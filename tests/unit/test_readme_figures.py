"""The README's `check` figures are what `check` says on the shipped sample, so they cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from ragtriage.checks import check_run
from ragtriage.sample import sample_run_dirs, sample_runs_path
from ragtriage.store import connect, load_dataset, load_run

ROOT = Path(__file__).resolve().parents[2]
WORDS = {"One": 1, "Two": 2, "Three": 3, "Four": 4, "Five": 5}


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


def test_readme_check_sentence_matches_the_sample(store: duckdb.DuckDBPyConnection) -> None:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    m = re.search(
        r"`check`: only `(?P<run>[\w-]+)` leaks — (?P<rows>[\d,]+) leaked result rows \((?P<findings>[\d,]+) rule "
        r"findings.*?\) in (?P<cases>\d+) cases \((?P<cand>\d+) of them only in the candidate stage\).*? "
        r"(?P<unchecked>\w+) cases have no principal",
        text,
    )
    assert m is not None, "the README's check sentence changed shape; update this test with it"
    counts = {r: check_run(store, r).counts() for r in ("bm25", "dense", "hybrid-rerank", "no-acl-filter")}
    leaking = [r for r, c in counts.items() if c["leak_findings"]]
    assert leaking == [m["run"]]
    c = counts[m["run"]]
    assert c["leaked_result_rows"] == _number(m["rows"]) == 2681
    assert c["leak_findings"] == _number(m["findings"]) == 3873
    assert c["leaked_cases"] == int(m["cases"])
    assert c["candidate_only_leaked_cases"] == int(m["cand"])
    assert c["unchecked_cases"] == WORDS[m["unchecked"]]


def test_sample_readme_table_leak_cell_matches(store: duckdb.DuckDBPyConnection) -> None:
    table = (sample_runs_path() / "README.md").read_text(encoding="utf-8")
    row = next(line for line in table.splitlines() if line.startswith("| no-acl-filter |"))
    m = re.search(r"\| ([\d,]+) / ([\d,]+) \((\d+) of (\d+) checked; (\d+) only", row)
    assert m is not None
    c = check_run(store, "no-acl-filter").counts()
    checked = store.execute("SELECT count(*) FROM cases").fetchall()[0][0] - c["unchecked_cases"]
    assert (c["leaked_result_rows"], c["leak_findings"], c["leaked_cases"]) == tuple(map(_number, m.groups()[:3]))
    assert (checked, c["candidate_only_leaked_cases"]) == (int(m[4]), int(m[5]))
