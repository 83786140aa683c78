"""Each gate rule passing and failing on the hand-built store of test_gate_store (figures computed by hand)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from ragtriage.gate.config import Regression, parse_gate
from ragtriage.gate.outcome import RuleResult, Verdict
from ragtriage.gate.rules import _regression_reason
from ragtriage.gate.verdict import evaluate_gate, record_verdict
from tests.unit.test_gate_store import backdate, gate_store_fixture  # noqa: F401  (fixture)


def _run(
    tmp_path: Path, con: duckdb.DuckDBPyConnection, text: str, run: str = "cand", baseline: str = "base"
) -> Verdict:
    path = tmp_path / "gate.toml"
    path.write_text(text, encoding="utf-8")
    return evaluate_gate(con, parse_gate(backdate(path)), run, baseline)


def _rule(v: Verdict, name: str) -> RuleResult:
    return next(r for r in v.rules if r.rule == name)


def _ids(r: RuleResult) -> list[str]:
    return [f.case_id for f in r.failures]


REG = "[[regression]]\nmetric = 'R@10'\n"


@pytest.mark.slow
def test_regression_beyond_tolerance_fails_with_the_losing_case(
    tmp_path: Path, gate_store: duckdb.DuckDBPyConnection
) -> None:
    v = _run(tmp_path, gate_store, REG + "tolerance = 0.1\n")
    r = _rule(v, "regression:R@10:holdout")
    # holdout diffs 0, -1, 0, 0: mean -0.25; a single non-zero diff gives an exact p of 1.
    assert not r.passed and not v.passed
    assert r.value == pytest.approx(-0.25)
    assert "p = 1" in r.figure and "0/3/1 W/T/L on 4 holdout cases" in r.figure
    assert r.notes == (
        "failed: Δ -0.2500 is below -0.1 (the rule does not ask for significance)",
        'split: holdout (the default where the dataset has splits; set split = "all" for every case)',
    )
    (f,) = r.failures
    assert (f.case_id, f.slice, f.category) == ("h2", "query_type=direct", "ranking")
    assert f.detail == "R@10 1.000 → 0.000"


@pytest.mark.slow
def test_regression_within_tolerance_or_not_significant_passes(
    tmp_path: Path, gate_store: duckdb.DuckDBPyConnection
) -> None:
    assert _rule(_run(tmp_path, gate_store, REG + "tolerance = 0.25\n"), "regression:R@10:holdout").passed
    r = _rule(_run(tmp_path, gate_store, REG + "require_significance = true\n"), "regression:R@10:holdout")
    # holdout mean Δ -0.25 below the tolerance 0, one non-zero difference: exact p = 1
    assert r.passed and r.notes == (
        "passed: Δ -0.2500 is below -0 but not significant (p = 1 ≥ 0.05)",
        'split: holdout (the default where the dataset has splits; set split = "all" for every case)',
    )
    assert r.threshold == "mean ΔR@10 ≥ -0, or a larger drop that is not significant (p ≥ 0.05)"
    within = _rule(_run(tmp_path, gate_store, REG + "tolerance = 0.25\n"), "regression:R@10:holdout")
    assert within.notes[0] == "passed: Δ -0.2500 is within the tolerance (≥ -0.25); p = 1 is reported, not required"
    assert within.threshold == "mean ΔR@10 ≥ -0.25"


def test_a_significant_drop_names_its_p_value() -> None:
    rule = Regression("R@10", tolerance=0.02, require_significance=True, alpha=0.05)
    why = _regression_reason(rule, -0.1, 0.0012, drop=True, significant=True)
    assert why == "failed: Δ -0.1000 is below -0.02 and significant (p = 0.0012 < 0.05)"


@pytest.mark.slow
def test_regression_on_all_splits_counts_the_dev_case(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    r = _rule(_run(tmp_path, gate_store, REG + "split = 'all'\ntolerance = 0.21\n"), "regression:R@10:all splits")
    assert r.passed and r.value == pytest.approx(-0.2)


@pytest.mark.slow
def test_regression_with_no_paired_cases_fails(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    r = _rule(_run(tmp_path, gate_store, REG + "split = 'staging'\n"), "regression:R@10:staging")
    assert not r.passed and r.figure == "no paired cases on staging"


SLICE = "[[slice_minimum]]\nslice = { doc_type = 'table' }\nmetric = 'nDCG@5'\nmin = "


@pytest.mark.slow
def test_slice_minimum(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    r = _rule(_run(tmp_path, gate_store, SLICE + "0.6\n"), "slice_minimum:doc_type=table:nDCG@5")
    # h3 (0.8) and h4 (0.3) have table evidence: mean 0.55 < 0.6; only h4 is below the minimum itself.
    assert not r.passed and r.value == pytest.approx(0.55)
    assert [(f.case_id, f.slice, f.category) for f in r.failures] == [("h4", "doc_type=table", "ingestion")]
    assert _rule(_run(tmp_path, gate_store, SLICE + "0.55\n"), "slice_minimum:doc_type=table:nDCG@5").passed


def test_slice_minimum_on_an_empty_slice_fails(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    text = "[[slice_minimum]]\nslice = { doc_type = 'faq' }\nmetric = 'nDCG@5'\nmin = 0.1\n"
    r = _rule(_run(tmp_path, gate_store, text), "slice_minimum:doc_type=faq:nDCG@5")
    assert not r.passed and "no cases" in r.figure


@pytest.mark.slow
def test_critical_cases(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    text = "[critical_cases]\nmetric = 'R@10'\nmin = 1.0\n"
    r = _rule(_run(tmp_path, gate_store, text), "critical_cases:R@10")
    assert not r.passed and _ids(r) == ["h2"] and r.figure.startswith("1 of 2 critical cases")
    assert _rule(_run(tmp_path, gate_store, text, run="base"), "critical_cases:R@10").passed


def test_zero_hit_rate(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    r = _rule(_run(tmp_path, gate_store, "[zero_hit]\nk = 10\nmax_rate = 0.2\n"), "zero_hit@10")
    assert not r.passed and r.value == pytest.approx(0.25) and _ids(r) == ["h2"]
    assert _rule(_run(tmp_path, gate_store, "[zero_hit]\nk = 10\nmax_rate = 0.25\n"), "zero_hit@10").passed


@pytest.mark.slow
def test_negative_cases(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    r = _rule(_run(tmp_path, gate_store, "[negative_cases]\n"), "negative_cases")
    # n1 returns nothing (passes), n2 returns one result (fails): share 0.5.
    assert not r.passed and r.value == pytest.approx(0.5)
    (f,) = r.failures
    assert (f.case_id, f.slice, f.category) == ("n2", "query_type=negative", "dataset")
    assert "expected empty" in f.detail
    assert _rule(_run(tmp_path, gate_store, "[negative_cases]\nmin_share = 0.5\n"), "negative_cases").passed


@pytest.mark.slow
def test_latency_p95_and_timeouts(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    # 7 latencies 10..60 and 1000: p95 at position 5.7 → 60 + 0.7 * 940 = 718 ms; h4 timed out.
    r = _rule(_run(tmp_path, gate_store, "[latency]\np95_ms = 700\n"), "latency")
    assert not r.passed and r.value == pytest.approx(718.0) and r.failures == ()
    assert _rule(_run(tmp_path, gate_store, "[latency]\np95_ms = 718\nmax_timeouts = 1\n"), "latency").passed
    r = _rule(_run(tmp_path, gate_store, "[latency]\nmax_timeouts = 0\n"), "latency")
    assert not r.passed and _ids(r) == ["h4"] and r.failures[0].category == "ingestion"


@pytest.mark.slow
def test_latency_without_events_fails(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    r = _rule(_run(tmp_path, gate_store, "[latency]\np95_ms = 5000\n", run="leaky"), "latency")
    assert not r.passed and r.figure == "no events recorded for the run"


@pytest.mark.slow
def test_leakage_always_runs_and_fails_on_a_candidate_stage_leak(
    tmp_path: Path, gate_store: duckdb.DuckDBPyConnection
) -> None:
    v = _run(tmp_path, gate_store, REG + "tolerance = 1.0\n", run="leaky")
    r = _rule(v, "leakage")
    assert not r.passed and not v.passed
    (f,) = r.failures
    assert (f.case_id, f.category) == ("h1", "security") and "candidate rank" in f.detail
    assert _rule(v, "regression:R@10:holdout").passed  # relevance does not offset it
    assert _rule(_run(tmp_path, gate_store, ""), "leakage").passed


@pytest.mark.slow
def test_reproducibility(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    good = _rule(_run(tmp_path, gate_store, ""), "reproducibility")
    assert good.passed and good.figure == "all recorded"
    bad = _rule(_run(tmp_path, gate_store, "", run="leaky"), "reproducibility")
    assert not bad.passed
    for item in ("dataset_version", "corpus_snapshot", "configuration"):
        assert item in bad.figure
    lax = "[reproducibility]\nrequire = ['raw_results', 'evaluator_version']\n"
    r = _rule(_run(tmp_path, gate_store, lax, run="leaky"), "reproducibility")
    assert r.passed and any(n.startswith("not required: configuration") for n in r.notes)


@pytest.mark.slow
def test_gate_file_edited_after_the_run_was_loaded_is_reported(
    tmp_path: Path, gate_store: duckdb.DuckDBPyConnection
) -> None:
    path = tmp_path / "late.toml"
    path.write_text("", encoding="utf-8")
    future = path.stat().st_mtime + 3600
    os.utime(path, (future, future))
    r = _rule(evaluate_gate(gate_store, parse_gate(path), "cand", "base"), "reproducibility")
    assert not r.passed and "gate_file_predates_run: gate file modified" in r.figure


@pytest.mark.slow
def test_verdict_is_recorded_with_the_gate_hash(tmp_path: Path, gate_store: duckdb.DuckDBPyConnection) -> None:
    v = _run(tmp_path, gate_store, REG)
    first, second = record_verdict(gate_store, v), record_verdict(gate_store, v)
    assert (first, second) == (1, 2)
    row = gate_store.execute(
        "SELECT run_id, baseline, gate_sha256, passed, n_rules, n_failed, report->>'$.passed' FROM gate_verdicts "
        "WHERE verdict_id = 2"
    ).fetchall()[0]
    assert row == ("cand", "base", v.gate_sha256, False, 3, 1, "false")
