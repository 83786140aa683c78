"""Defect classification: every failure of a run tagged dataset, ingestion, ranking, security (or undetermined
when the loaded inputs cannot tell), with the rule that decided it, its evidence (ranks, ids), the
failure-pattern hints with the experiment that isolates each, and what each category costs the run's nDCG@k.

Rules, their order and the patterns are data (``rules.py``) and are documented in docs/classifier.md.
"""

from ragtriage.classify.chunked import classify_chunks, pending, refresh
from ragtriage.classify.classify_run import (
    FAILURE_SCHEMA,
    FailureSummary,
    RunClassification,
    case_categories,
    classify_run,
    failure_list,
    failure_summary,
    failures,
    run_classification,
    store_classification,
)
from ragtriage.classify.cost import COST_CATEGORIES, CategoryCost, CostReport
from ragtriage.classify.locations import LOCATIONS, unit_locations
from ragtriage.classify.rules import CATEGORIES, FAILURES, INPUTS, PATTERNS, RULES, Pattern, Rule
from ragtriage.classify.stored import Progress, judging_k, progress

__all__ = [
    "FAILURE_SCHEMA",
    "CATEGORIES",
    "COST_CATEGORIES",
    "FAILURES",
    "INPUTS",
    "LOCATIONS",
    "PATTERNS",
    "RULES",
    "CategoryCost",
    "CostReport",
    "FailureSummary",
    "Pattern",
    "Progress",
    "Rule",
    "RunClassification",
    "case_categories",
    "classify_chunks",
    "classify_run",
    "failure_list",
    "failure_summary",
    "failures",
    "judging_k",
    "pending",
    "progress",
    "refresh",
    "run_classification",
    "store_classification",
    "unit_locations",
]
