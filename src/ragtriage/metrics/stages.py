"""Candidate stage against final stage: was the evidence found before reranking, and kept after it?

Candidate recall at candidate_k (the run's declared candidate depth) bounds what the reranker can achieve; a case
with high candidate recall and low final recall lost its evidence in reranking, one with low candidate recall
never had it (a retrieval or indexing defect).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import duckdb
import pyarrow as pa

from ragtriage.metrics.context import DEFAULT_KS, EvalContext, MetricsError, arrow, context_of
from ragtriage.metrics.gain import DEFAULT_GAIN
from ragtriage.metrics.per_case import per_case_context
from ragtriage.store.connection import run_fact


@dataclass
class StagesReport:
    run_id: str
    threshold: int
    candidate_k: int
    ks: tuple[int, ...]
    per_case: pa.Table  # case_id, n_relevant, "candidate R@ck", "R@k"/"nDCG@k" of the final stage, lost_in_rerank
    summary: pa.Table  # stage, measure, mean, n

    def to_arrow(self) -> pa.Table:
        return self.summary

    to_arrow_table = to_arrow


def _candidate_k(con: duckdb.DuckDBPyConnection, run_id: str) -> int:
    t = arrow(
        con,
        f"""SELECT {run_fact("candidate_k", "$1")} AS declared,
                   (SELECT max(rank) FROM results WHERE run_id = $1 AND stage = 'candidate') AS deepest""",
        [run_id],
    ).to_pylist()[0]
    if t["deepest"] is None:
        raise MetricsError(f"run {run_id!r} has no candidate-stage results; load them to compare stages")
    return int(t["declared"] or t["deepest"])


def stages(
    con: duckdb.DuckDBPyConnection,
    run: str | EvalContext,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    gain: str = DEFAULT_GAIN,
    split: str | None = None,
) -> StagesReport:
    """The final stage at the context's cutoffs against the candidate stage at the run's candidate depth."""
    final_ctx = replace(context_of(con, run, ks, gain=gain, split=split), stage="final")
    run_id = final_ctx.run_id
    ck = _candidate_k(con, run_id)
    cand_ctx = replace(final_ctx, stage="candidate", ks=(ck,))
    cand = per_case_context(con, cand_ctx, counts=False)
    final = per_case_context(con, final_ctx, counts=False)
    deepest = final_ctx.depth
    finals = ", ".join(f'f."R@{k}", f."nDCG@{k}"' for k in final_ctx.ks)
    per_case = arrow(
        con,
        f"""SELECT f.case_id, f.n_relevant, c."R@{ck}" AS "candidate R@{ck}", {finals},
                   c."R@{ck}" > f."R@{deepest}" AS lost_in_rerank
            FROM _f f JOIN _c c USING (case_id) ORDER BY f.case_id""",
        _f=final,
        _c=cand,
    )
    cols = [f"candidate R@{ck}"] + [f"{m}@{k}" for k in final_ctx.ks for m in ("R", "nDCG")]
    unions = " UNION ALL ".join(
        f"""SELECT '{"candidate" if i == 0 else "final"}' AS stage, '{c.removeprefix("candidate ")}' AS measure,
                   avg("{c}") AS mean, count("{c}") AS n FROM _p"""
        for i, c in enumerate(cols)
    )
    summary = arrow(
        con,
        unions + " UNION ALL SELECT 'final', 'lost_in_rerank', avg(CAST(lost_in_rerank AS DOUBLE)), "
        "count(lost_in_rerank) FROM _p",
        _p=per_case,
    )
    return StagesReport(run_id, final_ctx.threshold, ck, final_ctx.ks, per_case, summary)
