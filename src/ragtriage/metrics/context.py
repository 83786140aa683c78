"""What every metric query needs to know: the run, the stage, the cutoffs, the relevance threshold and the gain.

Resolving these once (and refusing bad values with a message that says what to pass instead) keeps the SQL of
each report free of validation, and lets every report print the threshold and gain its figures were made with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.fields import SPLITS, STAGES
from ragtriage.store import StoreError, current_dataset_version, require_run

GAINS = ("exponential", "linear")
DEFAULT_KS = (3, 5, 10)


class MetricsError(ValueError):
    """A metrics request that cannot be answered as asked (bad k, unknown stage, split or gain)."""


@dataclass(frozen=True)
class EvalContext:
    run_id: str
    stage: str
    ks: tuple[int, ...]
    gain: str
    split: str | None
    threshold: int
    unit: str

    @property
    def depth(self) -> int:
        return max(self.ks)

    def gain_sql(self, grade: str) -> str:
        """Gain of a grade; grades at or below zero never add to DCG."""
        if self.gain == "linear":
            return f"CAST(greatest({grade}, 0) AS DOUBLE)"
        return f"(CASE WHEN {grade} > 0 THEN pow(2.0, {grade}) - 1.0 ELSE 0.0 END)"

    def population_sql(self) -> tuple[str, list[Any]]:
        """Answerable cases of the current dataset (one split when asked): the cases every mean is taken over."""
        if self.split is None:
            return "SELECT case_id FROM cases WHERE answerable", []
        return "SELECT case_id FROM cases WHERE answerable AND split = ?", [self.split]


def parse_ks(ks: Sequence[int] | str) -> tuple[int, ...]:
    """Cutoffs as a sorted tuple of distinct positive ints ("3,5,10" is accepted too)."""
    if isinstance(ks, str):
        try:
            ks = [int(p) for p in ks.split(",") if p.strip()]
        except ValueError as exc:
            raise MetricsError(f"--k {ks!r}: give comma-separated positive integers, e.g. 3,5,10") from exc
    out = tuple(sorted({int(k) for k in ks}))
    if not out or out[0] < 1:
        raise MetricsError(f"cutoffs {list(ks)!r}: give at least one k >= 1, e.g. 3,5,10")
    return out


def resolve(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    ks: Sequence[int] | str = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = "exponential",
    split: str | None = None,
) -> EvalContext:
    if stage not in STAGES:
        raise MetricsError(f"stage {stage!r}: use one of {', '.join(STAGES)}")
    if gain not in GAINS:
        raise MetricsError(f"gain {gain!r}: use one of {', '.join(GAINS)}")
    if split is not None and split not in SPLITS:
        raise MetricsError(f"split {split!r}: use one of {', '.join(SPLITS)}")
    cur = con.cursor()
    try:
        current_dataset_version(cur)
        require_run(cur, run_id)
        row = cur.execute("SELECT relevance_threshold, unit FROM current_dataset").fetchone()
    finally:
        cur.close()
    if row is None:
        raise StoreError("no current dataset; run `ragtriage load --dataset DIR` first")
    return EvalContext(run_id, stage, parse_ks(ks), gain, split, int(row[0]), str(row[1]))


def arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None, **tables: pa.Table) -> pa.Table:
    """Run ``sql`` on a cursor of its own (DuckDB 2 refuses new work while a result is open) with Arrow inputs."""
    cur = con.cursor()
    try:
        for name, table in tables.items():
            cur.register(name, table)
        return cur.sql(sql, params=params or []).to_arrow_table()
    finally:
        cur.close()


def over_arrow(sql: str, params: dict[str, Any] | None = None, **tables: pa.Table) -> pa.Table:
    """Run ``sql`` over Arrow tables alone (no store) on a throwaway in-memory DuckDB: set-based work on results."""
    con = duckdb.connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        return con.sql(sql, params=params or {}).to_arrow_table()
    finally:
        con.close()
