"""The pure part of compare: pairing, wins/ties/losses, means, per-slice rows and worst regressions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from ragtriage.gate.compare import compare_tables, metric_names
from ragtriage.gate.config import gate_metric


def _per_case(rows: list[tuple[str, int, float, float]]) -> pa.Table:
    return pa.table(
        {
            "case_id": [r[0] for r in rows],
            "n_relevant": [r[1] for r in rows],
            "n_retrieved": [10] * len(rows),
            "R@10": [r[2] for r in rows],
            "nDCG@5": [r[3] for r in rows],
        }
    )


CAND = _per_case(
    [
        ("a", 1, 1.0, 0.9),
        ("b", 2, 0.5, 0.4),
        ("c", 1, 0.0, 0.0),
        ("d", 1, 1.0, 1.0),
        ("e", 0, 0.0, 0.0),
        ("x", 1, 1.0, 1.0),
    ]
)
BASE = _per_case([("a", 1, 0.0, 0.1), ("b", 2, 1.0, 0.8), ("c", 1, 0.0, 0.5), ("d", 1, 1.0, 1.0), ("e", 0, 0.0, 0.0)])
CASES = pa.table(
    {
        "case_id": ["a", "b", "c", "d", "e"],
        "split": ["holdout", "holdout", "dev", "holdout", "holdout"],
        "slice": ["faq", "table", "table", "faq", "faq"],
    }
)


def test_overall_pairs_every_case_in_both_runs() -> None:
    summary, pairs, worst = compare_tables(CAND, BASE, CASES, ["R@10", "nDCG@5"], n_resamples=1000)
    # x is only in the candidate; e (no relevant unit) is in both runs' figures, so it pairs too: the population
    # was chosen upstream (EvalContext.population_sql), and compare pairs exactly the cases it is given.
    assert set(pairs.column("case_id").to_pylist()) == {"a", "b", "c", "d", "e"}
    rows = {(r["slice"], r["metric"]): r for r in summary.to_pylist()}
    r10 = rows[("faq", "R@10")]
    assert (r10["n"], r10["wins"], r10["ties"], r10["losses"]) == (3, 1, 2, 0)
    overall = rows[("all", "R@10")]
    assert (overall["n"], overall["wins"], overall["ties"], overall["losses"]) == (5, 1, 3, 1)
    assert overall["candidate"] == pytest.approx(2.5 / 5)
    assert overall["baseline"] == pytest.approx(2.0 / 5)
    assert overall["mean_diff"] == pytest.approx(0.1)
    # Exact sign-flip over the two non-zero diffs (+1, -0.5): |mean| >= 0.1 in 2 of 4 sign vectors per tail.
    assert overall["p_value"] == pytest.approx(1.0)
    nd = rows[("all", "nDCG@5")]
    assert nd["mean_diff"] == pytest.approx((0.8 - 0.4 - 0.5 + 0.0 + 0.0) / 5)
    table = rows[("table", "nDCG@5")]
    assert table["mean_diff"] == pytest.approx((-0.4 - 0.5) / 2)
    # worst regressions, most negative first, with the case's slice
    w = [(r["metric"], r["case_id"], r["slice"]) for r in worst.to_pylist()]
    assert w == [("R@10", "b", "table"), ("nDCG@5", "c", "table"), ("nDCG@5", "b", "table")]
    assert worst.column("diff").to_pylist()[1] == pytest.approx(-0.5)


def test_split_filter_drops_dev_cases() -> None:
    summary, pairs, _ = compare_tables(CAND, BASE, CASES, ["nDCG@5"], split="holdout", n_resamples=1000)
    assert set(pairs.column("case_id").to_pylist()) == {"a", "b", "d", "e"}
    overall = next(r for r in summary.to_pylist() if r["slice"] == "all")
    assert overall["mean_diff"] == pytest.approx((0.8 - 0.4 + 0.0 + 0.0) / 4)


def test_multi_valued_slice_counts_a_case_once_overall() -> None:
    cases = pa.table({"case_id": ["a", "a", "b"], "split": ["holdout"] * 3, "slice": ["pdf", "table", "table"]})
    summary, _, _ = compare_tables(CAND, BASE, cases, ["R@10"], n_resamples=1000)
    rows = {r["slice"]: r["n"] for r in summary.to_pylist()}
    assert rows == {"all": 2, "pdf": 1, "table": 2}


def test_metric_names_and_parsing() -> None:
    assert metric_names([10, 5])[:2] == ["P@5", "P@10"]
    assert gate_metric("nDCG@5") == "nDCG@5"
    assert gate_metric("MRR@10") == "RR@10" and gate_metric("recall_5") == "R@5"
    with pytest.raises(ValueError, match="'MRR': a gate rule takes one of P, R, RR"):
        gate_metric("MRR")


def test_intervals_draw_the_packages_interval_resamples_and_the_test_its_own() -> None:
    import numpy as np

    from ragtriage.gate.significance import bootstrap_ci
    from ragtriage.metrics.distribution import N_RESAMPLES

    rng = np.random.default_rng(5)
    cand_v, base_v = rng.random(40), rng.random(40)
    ids = [f"q{i}" for i in range(40)]

    def table(v: np.ndarray) -> pa.Table:
        return pa.table({"case_id": ids, "n_relevant": [1] * 40, "n_retrieved": [10] * 40, "nDCG@5": v.tolist()})

    cases = pa.table({"case_id": ids, "split": ["holdout"] * 40, "slice": ["all"] * 40})
    summary, _, _ = compare_tables(table(cand_v), table(base_v), cases, ["nDCG@5"], n_resamples=20_000, seed=3)
    overall = summary.to_pylist()[0]
    d = cand_v - base_v
    # the interval: 1,000 resamples (as metrics and compare --runs), not the test's 20,000
    assert (overall["ci_low"], overall["ci_high"]) == bootstrap_ci(d, n_resamples=N_RESAMPLES, seed=3)
    assert (overall["ci_low"], overall["ci_high"]) != bootstrap_ci(d, n_resamples=20_000, seed=3)


def test_the_scratch_databases_run_under_their_own_cap() -> None:
    """compare joins and unfolds a row per (case, metric) in in-memory databases beside the store's connection:
    each runs under SCRATCH_LIMIT (spilling past it), not DuckDB's default share of the machine's memory."""
    from ragtriage.gate.compare import SCRATCH_LIMIT, _scratch

    con = _scratch()
    try:
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        spill = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
    finally:
        con.close()
    mib = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
    value, unit = limit.split()
    assert float(value) * mib[unit] <= SCRATCH_LIMIT / (1 << 20)
    assert "ragtriage-spill-" in spill
