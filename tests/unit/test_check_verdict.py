"""`check`'s three verdicts on file stores of the shipped sample: passed, failed and not checked. A run whose cases
carry no principal (or a store without a corpus manifest) could not be checked: the verdict says so, the exit code
is 3 (not 0), and nothing calls it passing; a run where some cases could be checked passes on those and names the
rest."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.checks import CheckVerdict, check_run
from ragtriage.cli import app
from ragtriage.store import connect, load_dataset, load_run
from tests.factory import SAMPLE

pytestmark = pytest.mark.slow  # the sample loaded and the CLI run per case

runner = CliRunner()
Edit = Callable[[int, dict[str, Any]], dict[str, Any]]


def sample_store(tmp_path: Path, edit: Edit, *, manifest: bool = True, run: str = "bm25") -> Path:
    """The sample dataset with each case passed through ``edit`` (index, case), loaded with one run."""
    folder = tmp_path / "dataset"
    shutil.copytree(SAMPLE / "dataset", folder)
    if not manifest:
        (folder / "documents.jsonl").unlink()
    lines = (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [edit(i, json.loads(line)) for i, line in enumerate(lines)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    db = tmp_path / "store.duckdb"
    con = connect(db)
    try:
        load_dataset(con, folder)
        load_run(con, SAMPLE / "runs" / run)
    finally:
        con.close()
    return db


def no_principal(_: int, case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in case.items() if k != "principal"}


def first_ten_without(i: int, case: dict[str, Any]) -> dict[str, Any]:
    return no_principal(i, case) if i < 10 else case


def _check(db: Path, *args: str) -> Any:
    return runner.invoke(app, ["check", "--db", str(db), "--run", "bm25", *args])


def test_no_principal_anywhere_is_not_checked_exit_3(tmp_path: Path) -> None:
    db = sample_store(tmp_path, no_principal)
    con = connect(db, read_only=True)
    report = check_run(con, "bm25")
    con.close()
    assert report.verdict is CheckVerdict.NOT_CHECKED and not report.passed and not report.strict_passed
    assert (report.coverage.cases, report.coverage.checked) == (170, 0)
    res = _check(db)
    assert res.exit_code == 3, res.output
    assert "NOT CHECKED: no case has a principal; leakage of none of the 170 case(s) could be checked" in res.output
    assert "PASSED" not in res.output
    # --strict cannot turn it into a pass either, and JSON says it in words and in its booleans
    assert _check(db, "--strict").exit_code == 3
    doc = json.loads(_check(db, "--format", "json").output)
    assert doc["context"]["passed"] is False and doc["context"]["verdict"].startswith("NOT CHECKED")
    counts = {r["check"]: r["count"] for r in doc["counts"]}
    assert (counts["cases"], counts["checked_cases"], counts["unchecked_cases"]) == (170, 0, 170)


def test_without_a_manifest_nothing_is_checked(tmp_path: Path) -> None:
    res = _check(sample_store(tmp_path, lambda _, c: c, manifest=False))
    assert res.exit_code == 3, res.output
    assert "NOT CHECKED: no corpus manifest to read acls from" in res.output


def test_some_cases_unchecked_passes_on_the_others_and_names_them(tmp_path: Path) -> None:
    db = sample_store(tmp_path, first_ten_without)
    res = _check(db)
    assert res.exit_code == 0, res.output
    # the sample leaves three cases without a principal itself (q124, q125, q152): 13 in all
    assert "PASSED on 157 checked case(s); 13 case(s) NOT CHECKED (no principal)" in res.output
    assert "unchecked (no principal): q001, q002" in res.output


def test_the_full_sample_is_checked_and_the_leaking_run_fails_whatever_is_unchecked(tmp_path: Path) -> None:
    res = _check(sample_store(tmp_path, lambda _, c: c))
    assert res.exit_code == 0 and "PASSED on 167 checked case(s); 3 case(s) NOT CHECKED" in res.output
    leaky = runner.invoke(
        app,
        ["check", "--db", str(sample_store(tmp_path / "l", first_ten_without, run="no-acl-filter"))]
        + ["--run", "no-acl-filter"],
    )
    assert leaky.exit_code == 1 and "FAILED: leakage" in leaky.output


@pytest.mark.parametrize("flag", ["--help"])
def test_help_documents_the_exit_codes(flag: str) -> None:
    out = runner.invoke(app, ["check", flag]).output
    assert "Exit 3: nothing" in out and "could be checked" in out


def _gate(tmp_path: Path, db: Path, text: str) -> Any:
    gate = tmp_path / "gate.toml"
    gate.write_text(text, encoding="utf-8")
    args = ["gate", "--db", str(db), "--gate", str(gate), "--run", "bm25", "--baseline", "bm25", "--no-record"]
    return runner.invoke(app, args)


def test_the_gate_fails_leakage_when_nothing_was_checked(tmp_path: Path) -> None:
    res = _gate(tmp_path, sample_store(tmp_path, no_principal), "")
    assert res.exit_code == 1, res.output
    line = next(x for x in res.output.splitlines() if "leakage:" in x and "leaked result row" in x)
    assert line.lstrip().startswith("FAIL  leakage: 0 leaked result row(s)")
    assert "0 of 170 case(s) checked (0.0%)" in line and "(needs no leaked rows (always on), checked on at" in line
    assert "leakage NOT CHECKED on enough cases: 0 of 170 checked, the gate needs at least one" in res.output


def test_a_gate_can_require_a_share_of_checked_cases(tmp_path: Path) -> None:
    # the sample leaves 3 of its 170 cases without a principal: 167 / 170 = 98.2% checked
    db = sample_store(tmp_path, lambda _, c: c)
    passed = _gate(tmp_path, db, "[leakage]\nmin_checked_share = 0.98\n")
    assert "pass  leakage: 0 leaked result row(s)" in passed.output and "167 of 170 case(s) checked (98.2%)" in (
        passed.output
    )
    assert "note: 3 case(s) unchecked (no principal): q124, q125, q152" in passed.output
    failed = _gate(tmp_path, db, "[leakage]\nmin_checked_share = 0.99\n")
    assert failed.exit_code == 1 and "FAIL  leakage:" in failed.output
    assert "167 of 170 checked, the gate needs 99%" in failed.output
