"""All safety and scope checks of one run, gathered into one report with one verdict.

``verdict`` is the hard verdict, one of three: ``failed`` when anything leaked, in any stage, directly or through
a snippet or metadata, or when a case without an optional filter saw units the filtered case's principal may not
see; ``not checked`` when nothing could be checked (no case has a principal, or there is no corpus manifest to
read acls from), which is never a pass; else ``passed``, with the cases that could not be checked counted beside
it. ``passed`` is ``verdict == passed``. Scope violations and failed negative cases are reported beside it and
fail only ``strict_passed``; stale results are information for triage. ``findings`` flattens every table into
one long table (the CSV and table output).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.checks.leakage import (
    NOT_APPLICABLE,
    Coverage,
    coverage,
    leakage,
    leaked_result_rows,
    unchecked_cases,
    unverifiable_results,
)
from ragtriage.checks.negatives import negative_outcomes
from ragtriage.checks.scope import filter_pairs, scope_violations, unchecked_filters
from ragtriage.checks.staleness import stale_first, stale_results
from ragtriage.metrics.context import over_arrow
from ragtriage.store import require_run

FINDING_COLUMNS = ("check", "case_id", "stage", "rank", "document_id", "chunk_id", "rule", "detail")

# Each check's rows in the findings shape, in report order (UNION ALL and LIMIT keep every part's row order). The
# derived tables and counts are DuckDB statements over the Arrow tables: a check without a manifest has a row per
# case, and pyarrow's Python-scalar compute would import pandas to compare a string. ``$first`` caps every part
# (a terminal's view); ``$unchecked`` is 0 to leave those out.
_FINDINGS_SQL = """
SELECT CAST("check" AS VARCHAR) AS "check", CAST(case_id AS VARCHAR) AS case_id, CAST(stage AS VARCHAR) AS stage,
       CAST(rank AS BIGINT) AS rank, CAST(document_id AS VARCHAR) AS document_id,
       CAST(chunk_id AS VARCHAR) AS chunk_id, CAST(rule AS VARCHAR) AS rule, CAST(detail AS VARCHAR) AS detail
FROM (
    (SELECT 'leakage' AS "check", case_id, stage, rank, document_id, chunk_id, rule, detail FROM leakage
     LIMIT $first)
    UNION ALL (SELECT 'scope', case_id, stage, rank, document_id, chunk_id, rule, detail FROM scope LIMIT $first)
    UNION ALL (SELECT 'negative', case_id, NULL, NULL, NULL, NULL, expected_behavior, reason FROM negatives
               WHERE NOT passed LIMIT $first)
    UNION ALL (SELECT 'stale', case_id, stage, rank, document_id, chunk_id, reason, detail FROM stale LIMIT $first)
    UNION ALL (SELECT 'stale-first', case_id, stage, stale_rank, stale_document_id, NULL, 'stale-version-first',
                      detail FROM stale_first LIMIT $first)
    UNION ALL (SELECT 'unchecked', case_id, NULL, NULL, NULL, NULL, 'no-principal', reason FROM unchecked
               LIMIT $unchecked)
    UNION ALL (SELECT 'unchecked-filter', case_id, NULL, NULL, NULL, NULL, filter, reason FROM unchecked_filters
               LIMIT $first)
    UNION ALL (SELECT 'unverifiable', case_id, stage, NULL, NULL, NULL, 'unit-not-in-manifest', detail
               FROM unverifiable LIMIT $first)
)
"""

_COUNTS_SQL = """
SELECT (SELECT count(DISTINCT case_id) FROM leakage) AS leaked_cases,
       (SELECT count(*) FROM (SELECT case_id FROM leakage GROUP BY case_id HAVING bool_and(stage = 'candidate')))
           AS candidate_only_leaked_cases,
       (SELECT coalesce(sum(rows), 0) FROM unverifiable) AS unverifiable_rows,
       (SELECT count(DISTINCT case_id) FROM unverifiable) AS unverifiable_cases,
       (SELECT count(*) FROM scope WHERE rule = 'out-of-scope') AS scope_violations,
       (SELECT count(*) FROM scope WHERE rule = 'optional-filter-broadened') AS optional_filter_broadened,
       (SELECT count(*) FROM negatives WHERE NOT passed) AS negative_failed
"""


# The columns each other check's table has, for a report of the leakage check alone (``leakage_only``).
_OTHER_CHECKS = {
    "unverifiable": "case_id VARCHAR, stage VARCHAR, rows BIGINT, detail VARCHAR",
    "scope": "case_id VARCHAR, stage VARCHAR, rank INTEGER, document_id VARCHAR, chunk_id VARCHAR, rule VARCHAR, "
    "detail VARCHAR",
    "pairs": "case_id VARCHAR",
    "unchecked_filters": "case_id VARCHAR, filter VARCHAR, reason VARCHAR",
    "negatives": "case_id VARCHAR, expected_behavior VARCHAR, reason VARCHAR, passed BOOLEAN",
    "stale": "case_id VARCHAR, stage VARCHAR, rank INTEGER, document_id VARCHAR, chunk_id VARCHAR, reason VARCHAR, "
    "detail VARCHAR",
    "stale_first": "case_id VARCHAR, stage VARCHAR, stale_rank INTEGER, stale_document_id VARCHAR, detail VARCHAR",
}

# Each table of a report (its field) and its name in the JSON document, in report order.
_JSON_NAMES = {
    "leakage": "leakage",
    "unchecked": "unchecked_cases",
    "unverifiable": "unverifiable_results",
    "scope": "scope_violations",
    "pairs": "filter_pairs",
    "unchecked_filters": "unchecked_filters",
    "negatives": "negative_outcomes",
    "stale": "stale_results",
    "stale_first": "stale_first",
}

LEAKAGE_COUNTS = (
    "leaked_result_rows",
    "leak_findings",
    "leaked_cases",
    "candidate_only_leaked_cases",
    "cases",
    "checked_cases",
    "unchecked_cases",
)
"""The counts of ``CheckReport.counts`` that the leakage check alone determines."""


class CheckVerdict(StrEnum):
    """The three outcomes of ``check``: a run that could not be checked has not passed."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class CheckReport:
    run_id: str
    leakage: pa.Table
    unchecked: pa.Table
    unverifiable: pa.Table
    scope: pa.Table
    pairs: pa.Table
    unchecked_filters: pa.Table
    negatives: pa.Table
    stale: pa.Table
    stale_first: pa.Table
    coverage: Coverage
    _tallies: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def leakage_only(cls, run_id: str, leaks: pa.Table, unchecked: pa.Table, cover: Coverage) -> CheckReport:
        """The report of an engine that runs the leakage check alone (Spark): every other check's table empty,
        so the verdict is the leakage verdict; say which checks did not run, and print only ``LEAKAGE_COUNTS``."""
        con = duckdb.connect()
        try:
            for name, columns in _OTHER_CHECKS.items():
                con.execute(f"CREATE TABLE {name} ({columns})")
            empty = {name: con.table(name).to_arrow_table() for name in _OTHER_CHECKS}
        finally:
            con.close()
        return cls(run_id=run_id, leakage=leaks, unchecked=unchecked, coverage=cover, **empty)

    def _tables(self) -> dict[str, pa.Table]:
        return {name: getattr(self, name) for name in _JSON_NAMES}

    def _tally(self) -> dict[str, int]:
        """The counts computed from the tables, once per report."""
        if not self._tallies:
            row = over_arrow(_COUNTS_SQL, **self._tables()).to_pylist()[0]
            self._tallies.update({k: int(v) for k, v in row.items()})
        return self._tallies

    @property
    def verdict(self) -> CheckVerdict:
        if self.leakage.num_rows or self._tally()["optional_filter_broadened"]:
            return CheckVerdict.FAILED
        applies = self.coverage.applicable
        return CheckVerdict.PASSED if self.coverage.checked or not applies else CheckVerdict.NOT_CHECKED

    def verdict_line(self) -> str:
        """The verdict as one sentence: what failed, or how many cases it covers and why the rest were not
        checked (the CLI's ``verdict`` and what any other view says)."""
        cov = self.coverage
        unchecked = f"{cov.cases - cov.checked:,} case(s) NOT CHECKED ({cov.why_unchecked()})"
        if self.verdict is CheckVerdict.FAILED:
            what = "leakage" if self.leakage.num_rows else "a missing optional filter broadened access"
            return f"FAILED: {what}" + (f"; {unchecked}" if cov.checked < cov.cases else "")
        if not cov.applicable and self.verdict is CheckVerdict.PASSED:
            return f"PASSED: leakage {NOT_APPLICABLE} ({cov.cases:,} case(s))"
        if self.verdict is CheckVerdict.NOT_CHECKED:
            why = "no case has a principal" if cov.has_manifest else cov.why_unchecked()
            return f"NOT CHECKED: {why}; leakage of none of the {cov.cases:,} case(s) could be checked"
        if cov.checked < cov.cases:
            return f"PASSED on {cov.checked:,} checked case(s); {unchecked}"
        return f"PASSED ({cov.checked:,} case(s) checked)"

    @property
    def passed(self) -> bool:
        return self.verdict is CheckVerdict.PASSED

    @property
    def strict_passed(self) -> bool:
        tally = self._tally()
        return self.passed and tally["scope_violations"] == 0 and tally["negative_failed"] == 0

    def counts(self) -> dict[str, int]:
        tally = self._tally()
        return {
            "leaked_result_rows": leaked_result_rows(self.leakage),
            "leak_findings": self.leakage.num_rows,
            "leaked_cases": tally["leaked_cases"],
            "candidate_only_leaked_cases": tally["candidate_only_leaked_cases"],
            "cases": self.coverage.cases,
            "checked_cases": self.coverage.checked,
            "unchecked_cases": self.unchecked.num_rows,
            "unverifiable_rows": tally["unverifiable_rows"],
            "unverifiable_cases": tally["unverifiable_cases"],
            "scope_violations": tally["scope_violations"],
            "optional_filter_pairs": self.pairs.num_rows,
            "optional_filter_broadened": tally["optional_filter_broadened"],
            "unchecked_filters": self.unchecked_filters.num_rows,
            "negative_cases": self.negatives.num_rows,
            "negative_failed": tally["negative_failed"],
            "stale_rows": self.stale.num_rows,
            "stale_first_lists": self.stale_first.num_rows,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: verdicts, counts and every table as a list of records."""
        return {
            "run_id": self.run_id,
            "verdict": self.verdict.value,
            "passed": self.passed,
            "strict_passed": self.strict_passed,
            "counts": self.counts(),
            **{_JSON_NAMES[name]: t.to_pylist() for name, t in self._tables().items()},
        }

    def findings(self, first: int = 0, *, unchecked: bool = True) -> pa.Table:
        """Every finding as one row of ``FINDING_COLUMNS`` (failed ones only; passing negatives are omitted).

        ``first`` > 0 keeps only the first ``first`` rows of each check (what a terminal shows: a run leaking on
        every row has millions of leak rows); ``unchecked=False`` leaves out the cases without a principal (listed
        apart, by their ids).
        """
        every = sum(t.num_rows for t in self._tables().values())
        cap = first if first > 0 else every
        params = {"first": cap, "unchecked": cap if unchecked else 0}
        return over_arrow(_FINDINGS_SQL, params, **self._tables())

    def finding_count(self, *, unchecked: bool = True) -> int:
        """How many rows :meth:`findings` has, without building them."""
        # every table's rows but the pairs (no finding of their own) and the passing negatives
        rows: int = sum(
            t.num_rows for name, t in self._tables().items() if name not in ("pairs", "negatives", "unchecked")
        )
        return rows + self._tally()["negative_failed"] + (self.unchecked.num_rows if unchecked else 0)


def check_run(con: duckdb.DuckDBPyConnection, run_id: str) -> CheckReport:
    """Run every check on ``run_id`` (unknown run: ``StoreError``)."""
    require_run(con, run_id)
    unchecked = unchecked_cases(con, run_id)
    return CheckReport(
        run_id=run_id,
        leakage=leakage(con, run_id),
        unchecked=unchecked,
        unverifiable=unverifiable_results(con, run_id),
        scope=scope_violations(con, run_id),
        pairs=filter_pairs(con, run_id),
        unchecked_filters=unchecked_filters(con),
        negatives=negative_outcomes(con, run_id),
        stale=stale_results(con, run_id),
        stale_first=stale_first(con, run_id),
        coverage=coverage(con, unchecked),
    )
