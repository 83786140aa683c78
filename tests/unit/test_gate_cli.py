"""`ragtriage gate` and `ragtriage compare`: exit codes, and the JSON, Markdown and JUnit files parsed back."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.unit.test_gate_store import backdate, gate_store_fixture  # noqa: F401  (fixture)

runner = CliRunner()

FAILING = """\
[gate]
name = "release"

[[regression]]
metric = "R@10"
tolerance = 0.1

[[slice_minimum]]
slice = { doc_type = "table" }
metric = "nDCG@5"
min = 0.6

[latency]
p95_ms = 5000
"""


@pytest.fixture
def db(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> Path:
    gate_store.close()
    return tmp_path / "store.duckdb"


def _gate(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(text, encoding="utf-8")
    return backdate(path)


def _invoke(*args: str | Path) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


@pytest.mark.slow
def test_failing_gate_exits_1_and_writes_three_reports(tmp_path: Path, db: Path) -> None:
    gate = _gate(tmp_path, FAILING)
    junit, md, js = tmp_path / "g.xml", tmp_path / "g.md", tmp_path / "g.json"
    code, out, _ = _invoke(
        "gate",
        "--db",
        db,
        "--gate",
        gate,
        "--run",
        "cand",
        "--baseline",
        "base",
        "--junit",
        junit,
        "--markdown",
        md,
        "--json",
        js,
    )
    assert code == 1
    assert "FAIL  regression:R@10:holdout" in out and "h2 [query_type=direct] ranking" in out

    data = json.loads(js.read_text())
    assert data["passed"] is False and data["run_id"] == "cand"
    assert [(r["rule"], r["passed"]) for r in data["rules"]] == [
        ("leakage", True),
        ("regression:R@10:holdout", False),
        ("slice_minimum:doc_type=table:nDCG@5", False),
        ("latency", True),
        ("reproducibility", True),
    ]
    assert data["failing_cases"] == [
        {
            "rule": "regression:R@10:holdout",
            "case_id": "h2",
            "slice": "query_type=direct",
            "category": "ranking",
            "detail": "R@10 1.000 → 0.000",
        },
        {
            "rule": "slice_minimum:doc_type=table:nDCG@5",
            "case_id": "h4",
            "slice": "doc_type=table",
            "category": "ingestion",
            "detail": "nDCG@5 0.300 < 0.6",
        },
    ]
    assert len(data["gate"]["sha256"]) == 64

    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "5" and root.get("failures") == "2"
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == [r["rule"] for r in data["rules"]]
    failures = {c.get("name"): c.find("failure") for c in cases}
    assert failures["leakage"] is None
    reg = failures["regression:R@10:holdout"]
    assert reg is not None and reg.get("type") == "regression"
    assert "h2 [query_type=direct] ranking: R@10 1.000 → 0.000" in (reg.text or "")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["run_id"] == "cand" and props["gate_sha256"] == data["gate"]["sha256"]

    text = md.read_text()
    # data (rule names carry slice values, case ids) is escaped text, never a code span it could break out of
    assert text.startswith("### ragtriage gate release: ❌ failed")
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| Rule")]
    assert "| regression:R@10:holdout | **FAIL** |" in rows[1]
    assert "| slice_minimum:doc_type=table:nDCG@5 | h4 | doc_type=table | ingestion | nDCG@5 0.300 &lt; 0.6 |" in rows


@pytest.mark.slow
def test_passing_gate_exits_0_and_records_the_verdict(tmp_path: Path, db: Path) -> None:
    gate = _gate(tmp_path, "[[regression]]\nmetric = 'R@10'\n[latency]\np95_ms = 10\n")
    code, out, _ = _invoke("gate", "--db", db, "--gate", gate, "--run", "base", "--baseline", "base")
    assert code == 0, out
    assert "4/4 rules passed" in out
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT run_id, passed FROM gate_verdicts").fetchall() == [("base", True)]
    con.close()


@pytest.mark.slow
def test_leaking_run_fails_even_when_relevance_passes(tmp_path: Path, db: Path) -> None:
    gate = _gate(tmp_path, "[reproducibility]\nrequire = []\n")
    code, out, _ = _invoke("gate", "--db", db, "--gate", gate, "--run", "leaky", "--baseline", "base", "--no-record")
    assert code == 1 and "h1 [query_type=direct] security" in out


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[regression]]\nmetric = 'R@10'\ntolerence = 0.1\n", "gate.toml:3: unknown key 'tolerence'"),
        ("[gate\n", "gate.toml:1: not valid TOML"),
        ("[leakage]\nenabled = false\n", "gate.toml:2: [leakage] takes only min_checked_share"),
        ("[[regression]]\nmetric = 'R@10'\ntolerance = nan\n", "gate.toml:3: [[regression]] tolerance = nan"),
        ("[negative_cases]\nmin_share = nan\n", "gate.toml:2: [negative_cases] min_share = nan"),
        ("[zero_hit]\nk = 1099511627776\nmax_rate = 0.1\n", "gate.toml:2: [zero_hit] k = 1099511627776"),
    ],
)
def test_bad_gate_file_exits_2_naming_file_line_and_key(tmp_path: Path, db: Path, text: str, needle: str) -> None:
    code, _, err = _invoke("gate", "--db", db, "--gate", _gate(tmp_path, text), "--run", "cand", "--baseline", "base")
    assert code == 2 and needle in err


@pytest.mark.slow
def test_unknown_run_exits_2(tmp_path: Path, db: Path) -> None:
    code, _, err = _invoke("gate", "--db", db, "--gate", _gate(tmp_path, ""), "--run", "nope", "--baseline", "base")
    assert code == 2 and "unknown run 'nope'" in err


@pytest.mark.slow
def test_compare_formats(db: Path) -> None:
    base = [
        "compare",
        "--db",
        db,
        "--run",
        "cand",
        "--baseline",
        "base",
        "--k",
        "10",
        "--metric",
        "R@10",
        "--split",
        "holdout",
        "--resamples",
        "1000",
    ]
    code, out, _ = _invoke(*base, "--format", "json")
    assert code == 0
    data = json.loads(out)
    (row,) = data["rows"]
    assert (row["metric"], row["n"], row["losses"], row["mean_diff"]) == ("R@10", 4, 1, -0.25)
    assert data["worst"][0]["case_id"] == "h2"

    code, out, _ = _invoke(*base, "--format", "csv", "--by", "query_type")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["slice"], r["n"], float(r["mean_diff"])) for r in rows] == [
        ("all", "4", -0.25),
        ("direct", "2", -0.5),
        ("lookup", "2", 0.0),
    ]
    code, out, _ = _invoke(*base, "--format", "markdown")
    assert code == 0 and "| all | R@10 | 4 | 0/3/1 | 1.0000 | 0.7500 | -0.2500 |" in out
    code, out, _ = _invoke(*base)
    assert code == 0 and "R@10" in out and "h2" in out


def test_compare_bad_metric_exits_2(db: Path) -> None:
    code, _, err = _invoke("compare", "--db", db, "--run", "cand", "--baseline", "base", "--metric", "MAPP")
    assert code == 2 and "unknown measure 'MAPP'" in err


@pytest.mark.slow
def test_runs_on_different_dataset_versions_exit_2(tmp_path: Path, db: Path) -> None:
    from ragtriage.store import connect, load_dataset, load_run
    from tests.factory import write_dataset, write_run
    from tests.unit.test_gate_store import BASE_RESULTS, CASES, DATASET, DOCS, GOOD_META, LABELS

    con = connect(db)
    extra = [{"case_id": "h3", "document_id": "T3", "chunk_id": "T3#1", "grade": 2}]
    load_dataset(
        con, write_dataset(tmp_path / "v2", dataset=DATASET, cases=CASES, labels=LABELS + extra, documents=DOCS)
    )
    load_run(
        con,
        write_run(tmp_path / "late", {"run_id": "late", **GOOD_META}, [{**r, "rank": 1} for r in BASE_RESULTS], None),
    )
    con.close()
    code, _, err = _invoke("gate", "--db", db, "--gate", _gate(tmp_path, ""), "--run", "late", "--baseline", "base")
    assert code == 2 and "dataset version" in err
    code, _, err = _invoke("compare", "--db", db, "--run", "late", "--baseline", "base")
    assert code == 2 and "reload one of them" in err
