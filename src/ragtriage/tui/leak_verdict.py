"""Each run's leakage verdict as the views state it: FAILS when anything leaked, NOT CHECKED when no case could be
checked (no case has a principal, or no corpus manifest to read acls from), else no leaks in the cases checked,
with the unchecked ones counted. Never "none" for a run nothing was checked on.

The figures are the core's: ``checks.leakage`` (cached per run), ``checks.unchecked_cases`` and the store's case
and manifest counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.checks.leakage import unchecked_cases
from ragtriage.tui.data import RunCache, core, leak_counts

FAILS, NOT_CHECKED, CLEAN = "fails", "not checked", "no leaks"


@dataclass(frozen=True)
class LeakVerdict:
    run_id: str
    leaked_cases: int
    leaked_final: int  # distinct final-stage results leaked
    cases: int
    unchecked: int  # cases without a principal
    has_manifest: bool

    @property
    def checked(self) -> int:
        return self.cases - self.unchecked if self.has_manifest else 0

    @property
    def state(self) -> str:
        if self.leaked_cases:
            return FAILS
        return CLEAN if self.checked else NOT_CHECKED

    def why_unchecked(self) -> str:
        return "no principal" if self.has_manifest else "no corpus manifest to read acls from"

    def sentence(self) -> str:
        """The verdict in words, for the overview's banner and Compare's verdict line."""
        if self.state == FAILS:
            return f"LEAKAGE FAILS: {self.leaked_cases} cases, {self.leaked_final} leaked final results"
        if self.state == NOT_CHECKED:
            return f"leakage: NOT CHECKED ({self.why_unchecked()} in any of {self.cases} cases)"
        rest = f"; {self.unchecked} not checked ({self.why_unchecked()})" if self.unchecked else ""
        return f"leakage: none in {self.checked} checked cases{rest}"


_STORE_SQL = "SELECT (SELECT count(*) FROM cases), (SELECT count(*) > 0 FROM documents)"


def leak_verdict(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> LeakVerdict:
    leaks = cache.table("leakage", run_id, cur)
    unchecked: pa.Table = cache.remember(
        ("unchecked", run_id), lambda: core("checks.unchecked_cases", unchecked_cases, cur, run_id)
    )
    ((cases, has_manifest),) = cur.execute(_STORE_SQL).fetchall()
    leaked_cases, leaked_final = leak_counts(leaks)
    return LeakVerdict(run_id, leaked_cases, leaked_final, int(cases), unchecked.num_rows, bool(has_manifest))
