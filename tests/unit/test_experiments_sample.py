"""compare --runs, the configuration diff and the gate with several candidates on the shipped sample's four runs.

The expected configuration differences were read off the four run.json files by hand; the table's figures are
checked against the one-pair comparison (``ragtriage.gate.compare``), a separate code path (SQL pairing, one
test per comparison).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.experiments.config_diff import ATTRIBUTION_WARNING, config_diffs
from ragtriage.gate.compare import compare
from ragtriage.store import connect
from tests.factory import SAMPLE, SAMPLE_RUNS, load_sample

RUNS = SAMPLE_RUNS

MEASURES = ("nDCG@10", "R@100", "RR@10")
runner = CliRunner()
pytestmark = pytest.mark.skipif(not (SAMPLE / "dataset").is_dir(), reason="sample_runs not generated")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("sample") / "triage.duckdb")


@pytest.mark.slow
def test_configuration_diff_of_the_four_sample_runs(db: Path) -> None:
    con = connect(db, read_only=True)
    try:
        against_bm25 = {d.run_id: d for d in config_diffs(con, list(RUNS), "bm25")}
        against_hybrid = {d.run_id: d for d in config_diffs(con, ["no-acl-filter"], "hybrid-rerank")}
    finally:
        con.close()
    assert against_bm25["bm25"].changes == () and against_bm25["bm25"].warning is None
    dense = {c.variable: (c.baseline, c.run) for c in against_bm25["dense"].changes}
    assert dense == {
        "embedding": ("(unset)", "lsa-tfidf-svd96 (trained on the index)"),
        "filters.effective_on": ("false", "true"),
        "filters.language": ("true", "false"),
        "filters.region": ("true", "false"),
        "system.bm25.b": ("0.75", "(unset)"),
        "system.bm25.k1": ("1.5", "(unset)"),
        "system.bm25s_version": ("0.3.16", "(unset)"),
        "system.retriever": ("bm25s", "numpy LSA"),
    }
    hybrid = [c.variable for c in against_bm25["hybrid-rerank"].changes]
    assert hybrid == [
        "embedding",
        "reranker",
        "k",
        "candidate depth",
        "filters.effective_on",
        "system.abstain_below",
        "system.default_effective_on",
        "system.retriever",
        "system.timeout_budget_ms",
    ]
    assert against_bm25["hybrid-rerank"].warning == ATTRIBUTION_WARNING
    # no-acl-filter is hybrid-rerank with two filters off: two variables, still not attributable to one
    acl = against_hybrid["no-acl-filter"]
    assert [(c.variable, c.baseline, c.run) for c in acl.changes] == [
        ("filters.acl", "true", "false"),
        ("filters.tenant", "true", "false"),
    ]
    assert acl.warning == ATTRIBUTION_WARNING


@pytest.mark.slow
def test_many_runs_table_agrees_with_the_one_pair_comparison(db: Path) -> None:
    args = ["compare", "--db", str(db), "--runs", ",".join(RUNS), "--baseline", "bm25", "--split", "holdout"]
    res = runner.invoke(app, [*args, *(a for m in MEASURES for a in ("--measure", m)), "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n_comparisons"] == 9 and out["correction"] == "holm" and out["test"] == "randomization"
    assert "Holm-Bonferroni over 9 comparisons" in out["method"]
    rows = {(r["run_id"], r["measure"]): r for r in out["table"]}
    assert len(rows) == 12
    con = connect(db, read_only=True)
    try:
        for run in RUNS[1:]:
            one = compare(con, run, "bm25", metrics=list(MEASURES), split="holdout")
            for m in MEASURES:
                ref, got = one.row(m), rows[(run, m)]
                assert got["n"] == ref["n"] == out["n_cases"]
                assert got["mean"] == pytest.approx(ref["candidate"], abs=1e-12)
                assert rows[("bm25", m)]["mean"] == pytest.approx(ref["baseline"], abs=1e-12)
                assert got["delta"] == pytest.approx(ref["mean_diff"], abs=1e-12)
                assert (got["wins"], got["ties"], got["losses"]) == (ref["wins"], ref["ties"], ref["losses"])
                # same seed, same sign vectors: the same p-value, before correction
                assert got["p_value"] == pytest.approx(ref["p_value"], abs=1e-12)
                assert got["p_adjusted"] >= got["p_value"]
    finally:
        con.close()
    config = {c["run_id"]: c for c in out["configuration"]}
    assert config["dense"]["warning"] == ATTRIBUTION_WARNING


def test_old_one_candidate_form_still_works(db: Path) -> None:
    res = runner.invoke(app, ["compare", "--db", str(db), "--run", "dense", "--baseline", "bm25", "--k", "5"])
    assert res.exit_code == 0, res.output
    assert "nDCG@5" in res.output and "AP@5" in res.output
    both = ["compare", "--db", str(db), "--run", "dense", "--runs", "dense", "--baseline", "bm25"]
    assert runner.invoke(app, both).exit_code == 2
    unknown = ["compare", "--db", str(db), "--runs", "dense,nope", "--baseline", "bm25"]
    res = runner.invoke(app, unknown)
    assert res.exit_code == 2 and "nope" in res.output


@pytest.mark.slow
def test_by_slice_and_categories_in_the_terminal_table(db: Path) -> None:
    args = ["compare", "--db", str(db), "--runs", "hybrid-rerank,no-acl-filter", "--baseline", "bm25"]
    res = runner.invoke(app, [*args, "--measure", "nDCG@10", "--by", "query_type", "--categories"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    start = lines.index("By query_type (worst slice first)")
    # the date slice is where hybrid-rerank loses most (docs/gate.md: effective_on assumed to be the run date)
    assert lines[start + 2].split()[:2] == ["nDCG@10", "date"]
    cats = lines.index("Failures by defect category against bm25")
    security = next(line for line in lines[cats:] if line.startswith("no-acl-filter") and "security" in line)
    # bm25 filters ACL and tenant, so all 153 leaking cases of no-acl-filter (docs/gate.md) are failures it adds
    assert security.split() == ["no-acl-filter", "security", "0", "153", "153", "0"]


@pytest.mark.slow
def test_gate_with_two_candidates_reports_each(db: Path, tmp_path: Path) -> None:
    junit, js = tmp_path / "gate.xml", tmp_path / "gate.json"
    res = runner.invoke(
        app,
        [
            "gate", "--db", str(db), "--gate", str(SAMPLE / "gate-pass.toml"), "--run", "hybrid-rerank",
            "--run", "no-acl-filter", "--baseline", "bm25", "--junit", str(junit), "--json", str(js), "--no-record",
        ],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "2 candidates against bm25: hybrid-rerank PASS, no-acl-filter FAIL" in res.output
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["ranking-change [hybrid-rerank]", "ranking-change [no-acl-filter]"]
    assert [s.get("failures") for s in suites] == ["0", "1"]
    verdicts = json.loads(js.read_text(encoding="utf-8"))
    assert verdicts["passed"] is False
    assert [(v["run_id"], v["passed"]) for v in verdicts["verdicts"]] == [
        ("hybrid-rerank", True),
        ("no-acl-filter", False),
    ]


def test_measures_by_ir_measures_or_trec_eval_name(db: Path) -> None:
    args = ["compare", "--db", str(db), "--runs", "dense", "--baseline", "bm25", "--format", "json"]
    names = ["--measure", "ndcg_cut_10", "--measure", "MRR@10", "--measure", "nDCG@10", "--measure", "AP"]
    res = runner.invoke(app, [*args, *names])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # trec_eval's ndcg_cut_10 is nDCG with linear gain, which is nDCG@10's default gain: the same figure under
    # its explicit name; MRR is ir_measures' alias of RR
    assert out["measures"] == ["nDCG(dcg='log2')@10", "RR@10", "nDCG@10", "AP"] and out["n_comparisons"] == 4
    rows = {r["measure"]: r for r in out["table"] if r["run_id"] == "bm25"}
    assert rows["nDCG(dcg='log2')@10"]["mean"] == pytest.approx(rows["nDCG@10"]["mean"], abs=1e-12)
    bad = runner.invoke(app, [*args, "--measure", "nDCG@x"])
    assert bad.exit_code == 2 and "nDCG@x" in bad.output
