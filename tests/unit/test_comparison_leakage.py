"""A leaking run is marked as failing in every summary of a comparison, before any relevance figure, and every
summary opens with one sentence per run: what blocks it (leakage), then the measures it is better or worse on
against the baseline, significant or not. On a file store of the shipped sample: no-acl-filter (hybrid-rerank
with its acl and tenant filters off) leaks 2,681 result rows in 153 cases and gains nDCG@10 +0.0108 over bm25."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.factory import load_sample

pytestmark = pytest.mark.slow  # the sample loaded and the CLI run per format

runner = CliRunner()
LEAKS = "✗ no-acl-filter: FAILS: it leaks (2,681 leaked result row(s) in 153 case(s), any stage), whatever its figures."


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(
        tmp_path_factory.mktemp("leak") / "sample.duckdb", runs=("bm25", "hybrid-rerank", "no-acl-filter")
    )


def _compare(db: Path, fmt: str) -> str:
    args = ["compare", "--db", str(db), "--runs", "hybrid-rerank,no-acl-filter", "--baseline", "bm25"]
    res = runner.invoke(app, [*args, "--format", fmt, "--resamples", "2000"])
    assert res.exit_code == 0, res.output
    return res.output


def test_terminal_opens_with_the_verdicts_and_marks_the_leaking_run(db: Path) -> None:
    out = _compare(db, "table")
    lines = out.splitlines()
    assert lines[0] == "Verdict per run"
    opening = " ".join(x.strip() for x in out.split("Runs against the baseline")[0].splitlines())
    assert LEAKS in opening
    assert "Against bm25: better on nDCG@10 (+0.0108, not significant" in opening
    assert "hybrid-rerank: no leak found (167 of 170 case(s) checked; 3 not checked (no principal))." in opening
    rows = [x for x in lines if x.startswith("no-acl-filter")]
    assert len(rows) == 3 and all(x.startswith("no-acl-filter ✗") for x in rows)
    assert not any(x.startswith("hybrid-rerank ✗") for x in lines)


def test_markdown_json_and_csv_mark_it_before_any_figure(db: Path) -> None:
    md = _compare(db, "markdown")
    assert md.startswith("### Verdict per run\n\n- hybrid-rerank: no leak found")
    assert md.index("\n- " + LEAKS) < md.index("|")
    assert "| no-acl-filter ✗ LEAKS | " in md and "| hybrid-rerank ✗" not in md

    doc = json.loads(_compare(db, "json"))
    keys = list(doc)
    assert keys.index("verdicts") < keys.index("table") and keys.index("leakage") < keys.index("table")
    assert doc["verdicts"][1].startswith(LEAKS)
    leak = {x["run_id"]: x for x in doc["leakage"]}
    assert leak["no-acl-filter"] == {
        "run_id": "no-acl-filter",
        "status": "leaks",
        "blocked": True,
        "leaked_result_rows": 2681,
        "leaked_cases": 153,
        "cases": 170,
        "checked_cases": 167,
        "gate": None,
        "gate_failed": [],
    }
    assert leak["hybrid-rerank"]["status"] == "no leak found" and not leak["hybrid-rerank"]["blocked"]

    rows = list(csv.reader(io.StringIO(_compare(db, "csv"))))
    assert rows[0][:3] == ["run_id", "leakage", "measure"]
    status = {r[0]: r[1] for r in rows[1:]}
    assert status == {"bm25": "no leak found", "hybrid-rerank": "no leak found", "no-acl-filter": "leaks"}


def test_the_report_opens_with_one_sentence_per_run(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    args = ["report", "--db", str(db), "--runs", "hybrid-rerank,no-acl-filter", "--baseline", "bm25"]
    res = runner.invoke(app, [*args, "--html", str(out), "--markdown", str(tmp_path / "r.md"), "--resamples", "2000"])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    first = html.index("<h2>")
    assert html[first:].startswith("<h2>Verdict per run</h2>\n<ul>\n<li>hybrid-rerank: no leak found")
    assert f"<li>{LEAKS} Against bm25: better on nDCG@10 (+0.0108, not significant" in html
    assert html.index(LEAKS) < html.index("<table>")
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert md.index("## Verdict per run") < md.index("## Runs against the baseline")


def test_with_a_gate_the_opening_names_the_rules_each_candidate_fails(db: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.toml"
    # the sample's date slice: hybrid-rerank 0.7017 < 0.75 over its 7 cases (docs/gate.md)
    gate.write_text(
        "[[slice_minimum]]\nslice = { query_type = 'date' }\nmetric = 'nDCG@10'\nmin = 0.75\nsplit = 'all'\n"
    )
    out = tmp_path / "r.md"
    args = ["report", "--db", str(db), "--runs", "hybrid-rerank", "--baseline", "bm25", "--markdown", str(out)]
    res = runner.invoke(app, [*args, "--gate", str(gate), "--resamples", "2000"])
    assert res.exit_code == 0, res.output
    md = out.read_text(encoding="utf-8")
    opening = "- ✗ hybrid-rerank: no leak found (167 of 170 case(s) checked; 3 not checked (no principal)); "
    assert opening + "FAILS gate 'gate' on slice_minimum:query_type=date:nDCG@10" in md
    assert "| hybrid-rerank ✗ FAILS GATE | " in md
    bad = tmp_path / "bad.toml"
    bad.write_text("[leakage]\nmin_checked_share = 2\n")
    res = runner.invoke(app, [*args, "--gate", str(bad), "--force"])
    assert res.exit_code == 2 and "min_checked_share must be a finite number from 0 to 1" in res.output


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv"])
def test_compare_one_candidate_states_its_leakage_before_any_figure(db: Path, fmt: str) -> None:
    args = ["compare", "--db", str(db), "--run", "no-acl-filter", "--baseline", "bm25", "--format", fmt]
    out = runner.invoke(app, [*args, "--resamples", "1000"]).output
    phrase = LEAKS.removeprefix("✗ no-acl-filter: ").removesuffix(".")
    if fmt == "json":
        doc = json.loads(out)
        assert list(doc["context"])[0] == "leakage" and doc["context"]["leakage"] == phrase
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert list(rows[0])[0] == "leakage" and {r["leakage"] for r in rows} == {phrase}
    else:
        assert out.lstrip("*").startswith(f"leakage {phrase} · run no-acl-filter"), out[:200]
    clean = runner.invoke(app, ["compare", "--db", str(db), "--run", "hybrid-rerank", "--baseline", "bm25"]).output
    assert clean.startswith("leakage no leak found (167 of 170 case(s) checked; 3 not checked (no principal))")


def test_compare_with_a_gate_names_the_failed_rules_in_both_forms(db: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate.toml"
    gate.write_text(
        "[[slice_minimum]]\nslice = { query_type = 'date' }\nmetric = 'nDCG@10'\nmin = 0.75\nsplit = 'all'\n"
    )
    base = ["compare", "--db", str(db), "--baseline", "bm25", "--gate", str(gate), "--resamples", "500"]
    many = runner.invoke(app, [*base, "--runs", "hybrid-rerank", "--format", "json"])
    (entry,) = [x for x in json.loads(many.output)["leakage"] if x["run_id"] == "hybrid-rerank"]
    assert entry["gate"] == "gate" and "slice_minimum:query_type=date:nDCG@10" in entry["gate_failed"]
    one = runner.invoke(app, [*base, "--run", "hybrid-rerank", "--format", "json"])
    assert "FAILS gate 'gate' on slice_minimum:query_type=date:nDCG@10" in json.loads(one.output)["context"]["leakage"]


def test_a_leaking_baseline_opens_the_verdicts(db: Path, tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    args = ["report", "--db", str(db), "--runs", "hybrid-rerank,bm25", "--baseline", "no-acl-filter"]
    res = runner.invoke(app, [*args, "--markdown", str(md), "--resamples", "2000"])
    assert res.exit_code == 0, res.output
    opening = md.read_text(encoding="utf-8").split("## Verdict per run\n\n", 1)[1]
    assert opening.startswith("- ✗ no-acl-filter (baseline): FAILS: it leaks (2,681 leaked result row(s)")
