"""All safety and scope checks of one run, gathered into one report with one verdict.

``passed`` is the hard verdict: false when anything leaked, in any stage, directly or through a snippet or
metadata, or when a case without an optional filter saw units the filtered case's principal may not see. Scope
violations and failed negative cases are reported beside it and fail only ``strict_passed``; stale results are
information for triage. ``findings`` flattens every table into one long table (the CSV and table output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.checks.leakage import leakage, leaked_result_rows, unchecked_cases, unverifiable_results
from ragtriage.checks.negatives import negative_outcomes
from ragtriage.checks.scope import filter_pairs, scope_violations, unchecked_filters
from ragtriage.checks.staleness import stale_first, stale_results
from ragtriage.store import require_run

FINDING_COLUMNS = ("check", "case_id", "stage", "rank", "document_id", "chunk_id", "rule", "detail")


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

    @property
    def broadened(self) -> pa.Table:
        """Scope rows where a missing optional filter widened access (counted as leakage)."""
        return self.scope.filter(pc.equal(self.scope["rule"], "optional-filter-broadened"))

    @property
    def out_of_scope(self) -> pa.Table:
        return self.scope.filter(pc.equal(self.scope["rule"], "out-of-scope"))

    @property
    def failed_negatives(self) -> pa.Table:
        return self.negatives.filter(pc.invert(self.negatives["passed"]))

    @property
    def passed(self) -> bool:
        return bool(self.leakage.num_rows == 0 and self.broadened.num_rows == 0)

    @property
    def strict_passed(self) -> bool:
        return self.passed and self.out_of_scope.num_rows == 0 and self.failed_negatives.num_rows == 0

    def counts(self) -> dict[str, int]:
        return {
            "leaked_result_rows": leaked_result_rows(self.leakage),
            "leak_findings": self.leakage.num_rows,
            "leaked_cases": len(set(self.leakage["case_id"].to_pylist())),
            "candidate_only_leaked_cases": _candidate_only(self.leakage),
            "unchecked_cases": self.unchecked.num_rows,
            "unverifiable_rows": _total(self.unverifiable, "rows"),
            "unverifiable_cases": len(set(self.unverifiable["case_id"].to_pylist())),
            "scope_violations": self.out_of_scope.num_rows,
            "optional_filter_pairs": self.pairs.num_rows,
            "optional_filter_broadened": self.broadened.num_rows,
            "unchecked_filters": self.unchecked_filters.num_rows,
            "negative_cases": self.negatives.num_rows,
            "negative_failed": self.failed_negatives.num_rows,
            "stale_rows": self.stale.num_rows,
            "stale_first_lists": self.stale_first.num_rows,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: verdicts, counts and every table as a list of records."""
        tables = {
            "leakage": self.leakage,
            "unchecked_cases": self.unchecked,
            "unverifiable_results": self.unverifiable,
            "scope_violations": self.scope,
            "filter_pairs": self.pairs,
            "unchecked_filters": self.unchecked_filters,
            "negative_outcomes": self.negatives,
            "stale_results": self.stale,
            "stale_first": self.stale_first,
        }
        return {
            "run_id": self.run_id,
            "passed": self.passed,
            "strict_passed": self.strict_passed,
            "counts": self.counts(),
            **{name: t.to_pylist() for name, t in tables.items()},
        }

    def findings(self) -> pa.Table:
        """Every finding as one row of ``FINDING_COLUMNS`` (failed ones only; passing negatives are omitted)."""
        parts = [
            _shape(self.leakage, "leakage", rule="rule", detail="detail"),
            _shape(self.scope, "scope", rule="rule", detail="detail"),
            _shape(self.failed_negatives, "negative", rule="expected_behavior", detail="reason"),
            _shape(self.stale, "stale", rule="reason", detail="detail"),
            _shape(self.stale_first, "stale-first", rule=None, detail="detail", rule_text="stale-version-first"),
            _shape(self.unchecked, "unchecked", rule=None, detail="reason", rule_text="no-principal"),
            _shape(self.unchecked_filters, "unchecked-filter", rule="filter", detail="reason"),
            _shape(self.unverifiable, "unverifiable", rule=None, detail="detail", rule_text="unit-not-in-manifest"),
        ]
        return pa.concat_tables(parts)


def _total(t: pa.Table, column: str) -> int:
    return int(pc.sum(t[column]).as_py() or 0)


def _candidate_only(leaks: pa.Table) -> int:
    """Cases whose leaks are all in the candidate stage (invisible to a final-stage-only review)."""
    per_case = leaks.group_by("case_id").aggregate([("stage", "min"), ("stage", "max")])
    only = pc.and_(pc.equal(per_case["stage_min"], "candidate"), pc.equal(per_case["stage_max"], "candidate"))
    return int(pc.sum(only.cast(pa.int64())).as_py() or 0)


def _shape(t: pa.Table, check: str, *, rule: str | None, detail: str, rule_text: str | None = None) -> pa.Table:
    """One check's table in the common findings shape (missing columns become nulls)."""
    n = t.num_rows

    def col(name: str | None, typ: pa.DataType) -> pa.Array:
        if name is None or name not in t.column_names:
            return pa.nulls(n, typ)
        return t[name].combine_chunks().cast(typ)

    return pa.table(
        {
            "check": pa.array([check] * n, pa.string()),
            "case_id": col("case_id", pa.string()),
            "stage": col("stage", pa.string()),
            "rank": col("rank", pa.int64()) if "rank" in t.column_names else col("stale_rank", pa.int64()),
            "document_id": col("document_id", pa.string())
            if "document_id" in t.column_names
            else col("stale_document_id", pa.string()),
            "chunk_id": col("chunk_id", pa.string()),
            "rule": pa.array([rule_text] * n, pa.string()) if rule_text else col(rule, pa.string()),
            "detail": col(detail, pa.string()),
        }
    )


def check_run(con: duckdb.DuckDBPyConnection, run_id: str) -> CheckReport:
    """Run every check on ``run_id`` (unknown run: ``StoreError``)."""
    require_run(con, run_id)
    return CheckReport(
        run_id=run_id,
        leakage=leakage(con, run_id),
        unchecked=unchecked_cases(con, run_id),
        unverifiable=unverifiable_results(con, run_id),
        scope=scope_violations(con, run_id),
        pairs=filter_pairs(con, run_id),
        unchecked_filters=unchecked_filters(con),
        negatives=negative_outcomes(con, run_id),
        stale=stale_results(con, run_id),
        stale_first=stale_first(con, run_id),
    )
