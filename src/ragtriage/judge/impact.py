"""What the judge's labels change: every run's measures with the people's labels alone and with the holes filled,
and the order of the runs under both (Kendall's tau between the two rankings, the TREC criterion for whether
judgments rank systems alike: UMBRELA and the TREC 2024 RAG track report tau near 0.9 and above).

The measures are ``metrics.evaluate_run``'s at one k (P, R, RR, nDCG, AP, Success and Judged@k, whose change is
how many of the top k the judge filled); the label choice is ``metrics.context.using_labels``.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.stats import kendalltau

from ragtriage.metrics.context import using_labels
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.metrics.measures import measures_for_ks
from ragtriage.store.connection import run_ids


def _aggregate(con: duckdb.DuckDBPyConnection, run: str, k: int, labels: str, stage: str) -> pa.Table:
    with using_labels(labels):
        agg = evaluate_run(con, run, measures_for_ks([k]), stage=stage).aggregate
    return agg.select(["measure", "value"])


def measure_changes(
    con: duckdb.DuckDBPyConnection, runs: list[str] | None = None, k: int = 10, *, stage: str = "final"
) -> pa.Table:
    """One row per run and measure: the value with human labels, with judge-filled holes, and the change."""
    parts = []
    for run in runs or run_ids(con):
        human = _aggregate(con, run, k, "human", stage)
        judged = _aggregate(con, run, k, "with-judge", stage)
        h = human.column("value").to_numpy(zero_copy_only=False)
        j = judged.column("value").to_numpy(zero_copy_only=False)
        parts.append(
            pa.table(
                {
                    "run": pa.array([run] * human.num_rows, pa.string()),
                    "measure": human.column("measure"),
                    "human": pa.array(h, pa.float64(), from_pandas=True),
                    "with_judge": pa.array(j, pa.float64(), from_pandas=True),
                    "change": pa.array(j - h, pa.float64(), from_pandas=True),
                }
            )
        )
    if not parts:
        return pa.table({"run": [], "measure": [], "human": [], "with_judge": [], "change": []})
    return pa.concat_tables(parts)


def ranking_agreement(changes: pa.Table) -> pa.Table:
    """Per measure: the runs ordered by the human figure, by the judge-filled one, and Kendall's tau (tau-b, ties
    counted as scipy does) between the two; tau is null with fewer than two runs or a constant column."""
    measures = pc.unique(changes.column("measure")).to_pylist()
    rows: dict[str, list[object]] = {"measure": [], "runs": [], "human_order": [], "judge_order": [], "kendall_tau": []}
    for m in measures:
        t = changes.filter(pc.equal(changes.column("measure"), m))
        runs = t.column("run").to_pylist()
        h = t.column("human").to_numpy(zero_copy_only=False).astype(np.float64)
        j = t.column("with_judge").to_numpy(zero_copy_only=False).astype(np.float64)
        tau = math.nan
        if len(runs) >= 2 and not (np.isnan(h).any() or np.isnan(j).any()):
            tau = float(kendalltau(h, j).statistic)
        rows["measure"].append(m)
        rows["runs"].append(len(runs))
        rows["human_order"].append(", ".join(runs[i] for i in np.argsort(-h, kind="stable")))
        rows["judge_order"].append(", ".join(runs[i] for i in np.argsort(-j, kind="stable")))
        rows["kendall_tau"].append(None if math.isnan(tau) else tau)
    return pa.table(
        rows,
        schema=pa.schema(
            [
                ("measure", pa.string()),
                ("runs", pa.int64()),
                ("human_order", pa.string()),
                ("judge_order", pa.string()),
                ("kendall_tau", pa.float64()),
            ]
        ),
    )
