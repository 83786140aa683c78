"""CONTRIBUTING.md's "A measure." recipe, followed on a toy measure registered in this test only: its name and
parameters in ``metrics.measures.SPECS``, its SQL through ``metrics.engine.register`` built from the
``Builder``'s pieces; its figure then comes out of ``ragtriage.evaluate`` like any shipped measure's."""

from __future__ import annotations

import pytest

import ragtriage
from ragtriage.metrics import engine, measures

QRELS = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 1}}
RUN = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d5": 1.0}}


@pytest.fixture
def hits(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Hits@k``: relevant results within k (a count, averaged over the cases)."""
    monkeypatch.setitem(measures.SPECS, "Hits", measures.Spec(needs_cut=True))  # takes rel=, needs a cutoff
    monkeypatch.setattr(engine, "_REGISTRY", dict(engine._REGISTRY))  # the registration ends with the test

    @engine.register("Hits")
    def _hits(b: engine.Builder, m: measures.Measure, r: int) -> str:
        return b.hits(r, m.cutoff)


def _figures(names: list[str]) -> dict[str, float]:
    agg = ragtriage.evaluate(QRELS, RUN, names).aggregate
    return dict(zip(agg.column("measure").to_pylist(), agg.column("value").to_pylist(), strict=True))


def test_the_toy_measure_gives_its_hand_computed_figure(hits: None) -> None:
    # q1: d1 (grade 1) and d3 (grade 2) are relevant at threshold 1: 1 hit in the top 2, 2 in the top 3;
    # q2's only result is unjudged: 0 hits. Means over the two cases.
    got = _figures(["Hits@2", "Hits@3", "Hits(rel=2)@3", "P@2"])
    assert got == {"Hits@2": 0.5, "Hits@3": 1.0, "Hits(rel=2)@3": 0.5, "P@2": 0.25}


def test_the_toy_measure_is_named_and_refused_as_a_shipped_one(hits: None) -> None:
    m = measures.parse_measure("Hits(rel=2)@3")
    assert (m.name, m.cutoff, m.rel, str(m), m.trec_name(1)) == ("Hits", 3, 2, "Hits(rel=2)@3", None)
    with pytest.raises(measures.MeasureError, match="needs a cutoff"):
        measures.parse_measure("Hits")


def test_without_the_registration_the_name_is_unknown() -> None:
    with pytest.raises(measures.MeasureError, match="unknown measure 'Hits'"):
        measures.parse_measure("Hits@3")
