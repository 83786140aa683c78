"""Whether each run of a comparison may ship at all, before any relevance figure is read: leakage.

A run that leaks has failed however its measures moved (leakage is a verdict, never a metric), and a run whose
leakage could not be checked (no case has a principal, or no corpus manifest) has not shown that it does not
leak. Every rendering of a comparison (terminal, Markdown, JSON, CSV, the HTML report) marks such a run first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from ragtriage.gate import sources

if TYPE_CHECKING:
    from ragtriage.checks.leakage import Coverage

LEAKS = "leaks"
NOT_CHECKED = "not checked"
NO_LEAK = "no leak found"


@dataclass(frozen=True)
class RunSafety:
    """One run's leakage: distinct leaked result rows and cases (any stage) and how many cases were checked."""

    run_id: str
    leaked_rows: int
    leaked_cases: int
    coverage: Coverage

    @property
    def status(self) -> str:
        """``leaks``, ``not checked`` or ``no leak found``."""
        if self.leaked_rows:
            return LEAKS
        return NO_LEAK if self.coverage.checked else NOT_CHECKED

    @property
    def blocked(self) -> bool:
        """The run cannot pass a release on these figures: it leaks, or nothing could be checked."""
        return self.status != NO_LEAK

    def phrase(self) -> str:
        """What the leakage check found, for the run's sentence."""
        cov = self.coverage
        if self.status == LEAKS:
            return (
                f"FAILS: it leaks ({self.leaked_rows:,} leaked result row(s) in {self.leaked_cases:,} case(s), any "
                "stage), whatever its figures"
            )
        if self.status == NOT_CHECKED:
            return f"leakage NOT CHECKED ({cov.why_unchecked()} on all {cov.cases:,} case(s)): it cannot pass"
        partly = f"; {cov.cases - cov.checked:,} not checked ({cov.why_unchecked()})" if cov.checked < cov.cases else ""
        return f"no leak found ({cov.checked:,} of {cov.cases:,} case(s) checked{partly})"


def run_safety(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> tuple[RunSafety, ...]:
    """The leakage of every run of a comparison, baseline included, in the order given."""
    out = []
    for run in runs:
        rows, cases, cov = sources.leak_summary(con, run)
        out.append(RunSafety(run, rows, cases, cov))
    return tuple(out)
