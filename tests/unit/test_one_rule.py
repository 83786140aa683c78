"""One rule each: relevance (``contract/relevance.RELEVANT``), gain and discount (``metrics/gain``), de-duplication
(``store/dedup.OCCURRENCE``) and population (``EvalContext.base_population_sql``) are each written in one place.
Changing that one place here moves every figure that reads the rule: the fixed per-case table, the same measure
asked by its ir_measures string and the population header, which stay equal to each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtriage.contract import relevance
from ragtriage.metrics import gain as gain_rule
from ragtriage.metrics import per_case
from ragtriage.metrics.context import EvalContext, resolve
from ragtriage.metrics.measure_eval import evaluate_run, population_counts
from ragtriage.store import dedup
from tests.factory import make_store
from tests.unit.test_metrics_agreement import _store, _trec_run

MEASURES = ["P@5", "R@10", "RR@10", "nDCG@10", "AP@10"]


@pytest.fixture
def con(tmp_path: Path):
    """A store with tied scores, repeated units in lists, cases without relevant labels, unlabelled cases, cases
    missing from the run and unanswerable cases."""
    con, _, _ = _store(tmp_path, 2, lambda rng, n: _trec_run(rng, n, False))
    yield con
    con.close()


def _figures(con) -> dict[str, Any]:
    """Per case, the fixed table's values and the same measures by name; the population header."""
    fixed = {r["case_id"]: r for r in per_case(con, "r", (5, 10), counts=False).to_pylist()}
    named = {r["case_id"]: r for r in evaluate_run(con, "r", MEASURES).wide.to_pylist()}
    for case_id, row in named.items():
        for m in MEASURES:  # one engine: the two agree whatever the rule says
            assert row[m] == pytest.approx(fixed[case_id][m], abs=1e-12, nan_ok=True), (case_id, m)
    header = population_counts(con, resolve(con, "r", (10,)))
    assert header["without_relevant"] == sum(r["n_relevant"] == 0 for r in fixed.values())
    assert header["cases"] == len(fixed)
    return {"fixed": fixed, "header": header}


def _perfect(tmp_path: Path):
    """One case whose list is its ideal ranking: grades 3, 2, 1 at positions 1, 2, 3."""
    labels = [{"case_id": "q", "document_id": d, "chunk_id": d, "grade": g} for d, g in (("a", 3), ("b", 2), ("c", 1))]
    results = [
        {"case_id": "q", "document_id": d, "chunk_id": d, "rank": i + 1, "score": 3.0 - i} for i, d in enumerate("abc")
    ]
    (tmp_path / "perfect").mkdir()
    return make_store(
        tmp_path / "perfect",
        dataset={"name": "p", "version": "1", "unit": "chunk", "relevance_threshold": 2},
        cases=[{"id": "q", "query": "q"}],
        labels=labels,
        runs=[{"run": {"run_id": "r", "k": 10}, "results": results}],
    )


def _moved(before: dict[str, Any], after: dict[str, Any], measure: str) -> int:
    """Cases whose ``measure`` differs between two sets of figures."""
    b, a = before["fixed"], after["fixed"]
    return sum(b[c][measure] != a.get(c, {}).get(measure) for c in b)


def test_relevance_is_one_template(con, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _figures(con)
    monkeypatch.setattr(relevance, "RELEVANT", "({grade} > {threshold})")
    after = _figures(con)
    assert after["header"]["without_relevant"] > before["header"]["without_relevant"]
    assert _moved(before, after, "P@5") > 5 and _moved(before, after, "RR@10") > 5


@pytest.mark.parametrize(
    ("name", "value"),
    [("GAIN", {**gain_rule.GAIN, "linear": gain_rule.GAIN["exponential"]}), ("DISCOUNT", "ln({pos} + 1)")],
)
def test_gain_and_discount_are_one_module(
    con, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: object
) -> None:
    before = _figures(con)
    monkeypatch.setattr(gain_rule, name, value)
    after = _figures(con)
    assert _moved(before, after, "nDCG@10") > 5
    assert _moved(before, after, "P@5") == 0 and after["header"] == before["header"]
    # the list's DCG and the ideal DCG read the same rule: the ideal ranking scores 1 whatever the rule
    ideal = per_case(_perfect(tmp_path), "r", (10,), counts=False).to_pylist()
    assert ideal[0]["nDCG@10"] == pytest.approx(1.0, abs=1e-12)


def test_deduplication_is_one_template(con, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _figures(con)
    trec_before = evaluate_run(con, "r", ["RR@10", "nDCG@10"], trec_compat=True).wide  # lists in trec_eval's order
    # every occurrence of a unit counts (no de-duplication)
    monkeypatch.setattr(dedup, "OCCURRENCE", "row_number() OVER (PARTITION BY {lists}, unit_id, rank ORDER BY rank)")
    after = _figures(con)
    assert _moved(before, after, "RR@10") > 3 and _moved(before, after, "nDCG@10") > 3
    assert after["header"] == before["header"]
    assert not evaluate_run(con, "r", ["RR@10", "nDCG@10"], trec_compat=True).wide.equals(trec_before)


def test_population_is_one_method(con, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _figures(con)
    original = EvalContext.base_population_sql

    def fewer(self: EvalContext, *, trec: bool = False) -> tuple[str, list[Any]]:
        sql, params = original(self, trec=trec)
        return f"SELECT case_id FROM ({sql}) WHERE case_id >= 'q020'", params

    monkeypatch.setattr(EvalContext, "base_population_sql", fewer)
    after = _figures(con)
    assert after["header"]["cases"] < before["header"]["cases"]
    assert set(after["fixed"]) < set(before["fixed"])
    assert after["header"]["without_relevant"] < before["header"]["without_relevant"]
