"""One order of leaks, final stage first (``checks.units.STAGE_ORDER``), in `check`'s output, the gate's failing
cases and the TUI's leak list and case screen, on a file store of the shipped sample (no-acl-filter leaks in both
stages: some cases in the final list and the candidates, some in the candidates only)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.app.browse.case import case_leaks
from ragtriage.app.browse.lists import leakage_by_case
from ragtriage.checks import STAGE_ORDER, leakage
from ragtriage.cli import app
from ragtriage.store import connect
from tests.factory import load_sample

pytestmark = pytest.mark.slow  # the sample loaded

runner = CliRunner()
RUN = "no-acl-filter"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("order") / "sample.duckdb", runs=(RUN,))


def _ranks(stages: list[str]) -> list[int]:
    return [STAGE_ORDER.index(s) for s in stages]


def test_the_core_lists_final_stage_leaks_first(db: Path) -> None:
    con = connect(db, read_only=True)
    leaks = leakage(con, RUN)
    con.close()
    stages = leaks.column("stage").to_pylist()
    assert STAGE_ORDER == ("final", "candidate")
    assert {"final", "candidate"} <= set(stages)
    assert _ranks(stages) == sorted(_ranks(stages))  # every final row before every candidate row
    finals = [(r["case_id"], r["rank"], r["rule"]) for r in leaks.to_pylist() if r["stage"] == "final"]
    assert finals == sorted(finals)  # then by case, rank and rule


def test_check_prints_final_stage_leaks_first_in_every_format(db: Path) -> None:
    out = runner.invoke(app, ["check", "--db", str(db), "--run", RUN, "--format", "csv"]).output
    stages = [r["stage"] for r in csv.DictReader(io.StringIO(out)) if r["check"] == "leakage"]
    assert stages[0] == "final" and _ranks(stages) == sorted(_ranks(stages))
    table = runner.invoke(app, ["check", "--db", str(db), "--run", RUN, "--limit", "5"]).output
    leak_lines = [line for line in table.splitlines() if line.lstrip("│ ").startswith("leakage")]
    assert len(leak_lines) == 5 and all(" final " in line for line in leak_lines)


def test_the_tui_lists_leaks_in_the_core_order(db: Path) -> None:
    con = connect(db, read_only=True)
    leaks = leakage(con, RUN)
    by_case = leakage_by_case(con.cursor(), leaks)
    con.close()
    # cases leaking in the final list come before the cases leaking only in the candidates
    has_final = [f > 0 for f in by_case.column("final").to_pylist()]
    assert True in has_final and False in has_final
    assert has_final == sorted(has_final, reverse=True)
    # a case leaking in both stages: its final-stage leaks first, by rank, as the core gives them
    both = next(r["case_id"] for r in by_case.to_pylist() if r["final"] and r["candidate"])
    shown = [(leak.stage, leak.rank) for leak in case_leaks(leaks, both)]
    core = list(dict.fromkeys((r["stage"], r["rank"]) for r in leaks.to_pylist() if r["case_id"] == both))
    assert shown == core and shown[0][0] == "final" and shown[-1][0] == "candidate"
