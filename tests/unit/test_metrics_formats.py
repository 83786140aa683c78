"""Every ``metrics --format`` on the bundled sample: table, json, csv, markdown and trec, aggregates and per case,
each carrying the same figures as the core functions and the population header."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.metrics import evaluate_run, summarize
from ragtriage.store import connect

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"
pytestmark = pytest.mark.skipif(not (SAMPLE / "dataset").is_dir(), reason="sample_runs not generated")
runner = CliRunner()
HEADER = ("excluded, no labels", "without relevant label", "absent from run (score 0)")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "triage.duckdb"
    res = runner.invoke(app, ["load", "--db", str(path), "--dataset", str(SAMPLE / "dataset"),
                              "--run", str(SAMPLE / "runs" / "bm25")])  # fmt: skip
    assert res.exit_code == 0, res.output
    return path


def _metrics(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["metrics", "--db", str(db), "--run", "bm25", *args])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.mark.slow
def test_csv_json_markdown_table_carry_the_summary(db: Path) -> None:
    con = connect(db, read_only=True)
    rep = summarize(con, "bm25", (3, 5, 10))
    con.close()
    p5 = rep.row("P", 5).mean
    rows = list(csv.DictReader(io.StringIO(_metrics(db, "--format", "csv"))))
    assert len(rows) == 21 and float(next(r for r in rows if r["measure@k"] == "P@5")["mean"]) == p5
    assert all(rows[0][h].isdigit() for h in HEADER) and rows[0]["cases"] == str(rep.n_cases)
    doc = json.loads(_metrics(db, "--format", "json"))
    assert next(r for r in doc["rows"] if r["measure@k"] == "P@5")["mean"] == p5
    assert doc["context"]["cases"] == rep.n_cases and set(HEADER) <= set(doc["context"])
    md = _metrics(db, "--format", "markdown")
    assert f"| P@5 | {p5:.4f} |" in md and "excluded, no labels" in md
    assert re.search(rf"P@5 +│ {p5:.4f}", _metrics(db, "--format", "table"))


def test_per_case_csv(db: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(_metrics(db, "--format", "csv", "--per-case"))))
    con = connect(db, read_only=True)
    labelled = con.execute("SELECT count(*) FROM cases WHERE answerable AND case_id IN (SELECT case_id FROM qrels)")
    assert len(rows) == labelled.fetchone()[0]  # type: ignore[index]
    con.close()


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_measures_by_name_in_every_format(db: Path, fmt: str) -> None:
    out = _metrics(db, "--measure", "nDCG(dcg='log2')@10", "-m", "P(rel=1)@5", "-m", "NumRet", "--format", fmt)
    con = connect(db, read_only=True)
    agg = {r["measure"]: r for r in evaluate_run(con, "bm25", ["nDCG(dcg='log2')@10", "P(rel=1)@5", "NumRet"])
           .aggregate.to_pylist()}  # fmt: skip
    con.close()
    value = agg["P(rel=1)@5"]["value"]
    if fmt == "json":
        rows = {r["measure"]: r for r in json.loads(out)["rows"]}
        assert rows["P(rel=1)@5"]["value"] == value and rows["NumRet"]["aggregation"] == "sum"
    elif fmt == "csv":
        rows = {r["measure"]: r for r in csv.DictReader(io.StringIO(out))}
        assert float(rows["P(rel=1)@5"]["value"]) == value and rows["nDCG(dcg='log2')@10"]["parameters"]
    else:
        assert f"{value:.4f}" in out and "P(rel=1)@5" in out and "excluded, no labels" in out


def test_trec_layout(db: Path) -> None:
    out = _metrics(db, "--trec-compat", "--format", "trec", "--k", "5,10")
    names = [line.split("\t")[0].strip() for line in out.splitlines()]
    assert names == ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
                     "P_5", "P_10", "recall_5", "recall_10", "ndcg_cut_5", "ndcg_cut_10", "map_cut_5", "map_cut_10",
                     "success_5", "success_10"]  # fmt: skip
    assert all(re.fullmatch(r"\S+ *\tall\t(\d+|\d+\.\d{4})", line) for line in out.splitlines())
    per_query = _metrics(db, "--trec-compat", "--format", "trec", "--k", "5", "--per-case").splitlines()
    qids = {line.split("\t")[1] for line in per_query} - {"all"}
    n_q = int(next(line for line in per_query if line.startswith("num_q")).split("\t")[2])
    assert len(qids) == n_q and len(per_query) == n_q * 12 + 13  # num_q only in the all block


def test_bad_measure_and_bad_combination_exit_2(db: Path) -> None:
    res = runner.invoke(app, ["metrics", "--db", str(db), "--run", "bm25", "--measure", "nDCG(dcg='exp')@10"])
    assert res.exit_code == 2 and "dcg='exp' is not one of log2, exp-log2" in res.output
    res = runner.invoke(app, ["metrics", "--db", str(db), "--run", "bm25", "--format", "trec", "--view", "judged"])
    assert res.exit_code == 2 and "--format trec" in res.output
