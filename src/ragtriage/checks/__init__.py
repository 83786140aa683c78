"""Safety and scope checks: permission leakage, filter scope, negative cases, stale documents.

A retriever that finds relevant but unauthorised evidence has failed however good its recall, so leakage is a
verdict (``CheckReport.verdict``: passed, failed or not checked; ``Coverage`` says how many cases it covers), never
a metric. Every check is one DuckDB statement over the store returning Arrow; ``check_run`` gathers them. The rules
are documented in docs/checks.md.
"""

from ragtriage.checks.calibration import (
    DEFAULT_TARGET_RECALL,
    Calibration,
    CalibrationError,
    calibrate,
    store_threshold,
)
from ragtriage.checks.leakage import Coverage, coverage, leakage, unchecked_cases, unverifiable_results
from ragtriage.checks.negatives import negative_outcomes
from ragtriage.checks.report import FINDING_COLUMNS, CheckReport, CheckVerdict, check_run
from ragtriage.checks.scope import SCOPE_ATTRIBUTES, filter_pairs, scope_violations, unchecked_filters
from ragtriage.checks.staleness import stale_first, stale_results, version_pairs
from ragtriage.checks.units import STAGE_ORDER, stage_order

__all__ = [
    "DEFAULT_TARGET_RECALL",
    "FINDING_COLUMNS",
    "SCOPE_ATTRIBUTES",
    "STAGE_ORDER",
    "Calibration",
    "CalibrationError",
    "CheckReport",
    "CheckVerdict",
    "Coverage",
    "calibrate",
    "check_run",
    "coverage",
    "filter_pairs",
    "leakage",
    "negative_outcomes",
    "scope_violations",
    "stale_first",
    "stage_order",
    "stale_results",
    "store_threshold",
    "unchecked_cases",
    "unchecked_filters",
    "unverifiable_results",
    "version_pairs",
]
