"""Defect classification: every failure of a run tagged dataset, ingestion, ranking or security, with the rule
that decided it, its evidence (ranks, ids) and the failure-pattern hints with the experiment that isolates each.

Rules, their order and the patterns are data (``rules.py``) and are documented in docs/classifier.md.
"""

from ragtriage.classify.classify_run import FAILURE_SCHEMA, classify_run, failures, store_classifications
from ragtriage.classify.failing_cases import FAILING_CASE_SCHEMA, failing_cases
from ragtriage.classify.locations import LOCATIONS, unit_locations
from ragtriage.classify.rules import CATEGORIES, FAILURES, PATTERNS, RULES, Pattern, Rule

__all__ = [
    "FAILING_CASE_SCHEMA",
    "failing_cases",
    "FAILURE_SCHEMA",
    "CATEGORIES",
    "FAILURES",
    "LOCATIONS",
    "PATTERNS",
    "RULES",
    "Pattern",
    "Rule",
    "classify_run",
    "failures",
    "store_classifications",
    "unit_locations",
]
