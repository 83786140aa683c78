"""Whether each run of a comparison may ship at all, before any relevance figure is read: leakage, and the rules
of a release gate when one is given.

A run that leaks has failed however its measures moved (leakage is a verdict, never a metric), and a run whose
leakage could not be checked (no case has a principal, or no corpus manifest) has not shown that it does not
leak. Every rendering of a comparison (terminal, Markdown, JSON, CSV, the HTML report) marks such a run first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from ragtriage.checks.leakage import NOT_APPLICABLE as LEAKAGE_NOT_APPLICABLE
from ragtriage.gate import sources

if TYPE_CHECKING:
    from ragtriage.checks.leakage import Coverage
    from ragtriage.gate.config import GateConfig

LEAKS = "leaks"
NOT_CHECKED = "not checked"
NO_LEAK = "no leak found"
NOT_APPLICABLE = "not applicable"


@dataclass(frozen=True)
class RunSafety:
    """One run's leakage: distinct leaked result rows and cases (any stage) and how many cases were checked."""

    run_id: str
    leaked_rows: int
    leaked_cases: int
    coverage: Coverage
    gate: str = ""  # the gate file's name when one was evaluated
    gate_failed: tuple[str, ...] = ()  # the gate's failed rules other than leakage (stated above)

    @property
    def status(self) -> str:
        """``leaks``, ``not applicable`` (the data declares no access rule), ``not checked`` or ``no leak found``."""
        if self.leaked_rows:
            return LEAKS
        if not self.coverage.applicable:
            return NOT_APPLICABLE
        return NO_LEAK if self.coverage.checked else NOT_CHECKED

    @property
    def blocked(self) -> bool:
        """The run cannot pass a release on these figures: it leaks, nothing could be checked, or it fails a rule
        of the gate."""
        return self.status not in (NO_LEAK, NOT_APPLICABLE) or bool(self.gate_failed)

    @property
    def mark(self) -> str:
        """The run cell's mark: ``LEAKS``, ``NOT CHECKED``, ``FAILS GATE`` or nothing."""
        if self.status not in (NO_LEAK, NOT_APPLICABLE):
            return self.status.upper()
        return "FAILS GATE" if self.gate_failed else ""

    def phrase(self) -> str:
        """What blocks the run (leakage, then the gate's rules), for the run's sentence."""
        cov = self.coverage
        if self.status == LEAKS:
            text = (
                f"FAILS: it leaks ({self.leaked_rows:,} leaked result row(s) in {self.leaked_cases:,} case(s), any "
                "stage), whatever its figures"
            )
        elif self.status == NOT_APPLICABLE:
            text = f"leakage {LEAKAGE_NOT_APPLICABLE}"
        elif self.status == NOT_CHECKED:
            text = f"leakage NOT CHECKED ({cov.why_unchecked()} on all {cov.cases:,} case(s)): it cannot pass"
        else:
            more = cov.cases - cov.checked
            partly = f"; {more:,} not checked ({cov.why_unchecked()})" if more else ""
            text = f"no leak found ({cov.checked:,} of {cov.cases:,} case(s) checked{partly})"
        if self.gate and self.gate_failed:
            text += f"; FAILS gate '{self.gate}' on {', '.join(self.gate_failed)}"
        elif self.gate:
            text += f"; every other rule of gate '{self.gate}' passes"
        return text


def run_safety(
    con: duckdb.DuckDBPyConnection, runs: Sequence[str], *, gate: GateConfig | None = None, baseline: str = ""
) -> tuple[RunSafety, ...]:
    """The leakage of every run of a comparison, baseline included, in the order given (``gate.sources.
    leak_summary``: the run's stored classification when fresh, else the leakage query); with ``gate``, each
    candidate's failed rules against ``baseline`` (``gate.verdict.evaluate_gate``, nothing recorded)."""
    from ragtriage.gate.verdict import evaluate_gate

    out = []
    for run in runs:
        rows, cases, cov = sources.leak_summary(con, run)
        failed: tuple[str, ...] = ()
        if gate is not None and run != baseline:
            verdict = evaluate_gate(con, gate, run, baseline)
            failed = tuple(r.rule for r in verdict.rules if not r.passed and r.kind != "leakage")
        out.append(RunSafety(run, rows, cases, cov, gate.name if gate and run != baseline else "", failed))
    return tuple(out)
