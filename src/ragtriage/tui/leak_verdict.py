"""Each run's leakage verdict as the views state it: FAILS when anything leaked, NOT CHECKED when no case could be
checked (no case has a principal, or no corpus manifest to read acls from), else no leaks in the cases checked,
with the unchecked ones counted. Never "none" for a run nothing was checked on.

The figures are the core's: ``checks.leakage`` (cached per run) and the check's coverage
(``checks.leakage.coverage`` over ``unchecked_cases``), the same figures ``ragtriage check`` reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.checks.leakage import NOT_APPLICABLE, Coverage, coverage, unchecked_cases
from ragtriage.tui.data import RunCache, core, leak_counts

FAILS, NOT_CHECKED, CLEAN = "fails", "not checked", "no leaks"


@dataclass(frozen=True)
class LeakVerdict:
    run_id: str
    leaked_cases: int
    leaked_final: int  # distinct final-stage results leaked
    coverage: Coverage

    @property
    def cases(self) -> int:
        return self.coverage.cases

    @property
    def checked(self) -> int:
        return self.coverage.checked

    @property
    def unchecked(self) -> int:
        return self.cases - self.checked

    def why_unchecked(self) -> str:
        return self.coverage.why_unchecked()

    @property
    def state(self) -> str:
        if self.leaked_cases:
            return FAILS
        return CLEAN if self.checked or not self.coverage.applicable else NOT_CHECKED

    def sentence(self) -> str:
        """The verdict in words, for the overview's banner."""
        if self.state == FAILS:
            return f"LEAKAGE FAILS: {self.leaked_cases} cases, {self.leaked_final} leaked final results"
        if self.state == NOT_CHECKED:
            return f"leakage: NOT CHECKED ({self.why_unchecked()} in any of {self.cases} cases)"
        if not self.coverage.applicable:
            return f"leakage: {NOT_APPLICABLE}"
        rest = f"; {self.unchecked} not checked ({self.why_unchecked()})" if self.unchecked else ""
        return f"leakage: none in {self.checked} checked cases{rest}"


def leak_verdict(cur: duckdb.DuckDBPyConnection, run_id: str, cache: RunCache) -> LeakVerdict:
    leaks = cache.table("leakage", run_id, cur)

    def covered() -> Coverage:
        unchecked: pa.Table = core("checks.unchecked_cases", unchecked_cases, cur, run_id)
        return core("checks.leakage.coverage", coverage, cur, unchecked)

    leaked_cases, leaked_final = leak_counts(leaks)
    return LeakVerdict(run_id, leaked_cases, leaked_final, cache.remember(("coverage", run_id), covered))
