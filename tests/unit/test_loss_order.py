"""Cases that lose equally come in case-id order, however the last bits of their per-case values fell.

A per-case value summed by DuckDB's parallel aggregation can differ in its last bits between two runs on the same
store; the gate's failing cases and ``compare``'s worst cases must not change order with them.
"""

from __future__ import annotations

import pyarrow as pa

from ragtriage.gate.compare import _worst, worst_first

# 0.847 and the same value a few bits off: equal to 9 decimals, ordered by the float bits they happen to have
BITS = 1e-15
DIFFS = {"q3": -0.847, "q1": -0.847 + BITS, "q2": -0.847 - BITS, "q0": -0.2, "q4": -0.9, "q5": 0.0, "q6": -1e-13}


def _pairs() -> pa.Table:
    ids = list(DIFFS)
    diffs = [DIFFS[c] for c in ids]
    return pa.table(
        {
            "metric": ["nDCG@10"] * len(ids),
            "metric_order": [0] * len(ids),
            "case_id": ids,
            "slice": ["all"] * len(ids),
            "candidate": [0.1 + d for d in diffs],
            "baseline": [0.1] * len(ids),
            "diff": diffs,
        }
    )


def test_worst_first_orders_equal_losses_by_case_id_not_by_their_last_bits() -> None:
    # sorted by the raw float, the three equal losses would come q2, q3, q1
    assert worst_first(_pairs()).column("case_id").to_pylist() == ["q4", "q1", "q2", "q3", "q0"]


def test_compare_worst_cases_take_the_same_order() -> None:
    assert _worst(_pairs(), 10).column("case_id").to_pylist() == ["q4", "q1", "q2", "q3", "q0"]
    assert _worst(_pairs(), 2).column("case_id").to_pylist() == ["q4", "q1"]
