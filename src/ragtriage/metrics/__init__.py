"""Retrieval metrics over the store: per case, aggregated, by slice, by stage, label coverage and latency.

Every function takes a DuckDB connection to a store and returns Arrow tables or dataclasses with ``to_arrow()``,
so the CLI, the TUI and the gate print the same numbers. Definitions: docs/metrics.md.
"""

from ragtriage.metrics.context import DEFAULT_KS, EvalContext, MetricsError, parse_ks
from ragtriage.metrics.gain import GAINS
from ragtriage.metrics.judged import judged_report
from ragtriage.metrics.latency import latency_report
from ragtriage.metrics.measure_eval import MeasureResult, evaluate_run
from ragtriage.metrics.measures import Measure, MeasureError, parse_measure, parse_measures
from ragtriage.metrics.per_case import MEASURES, per_case, per_case_schema
from ragtriage.metrics.slices import CASE_FIELDS, EVIDENCE_FIELDS, slices
from ragtriage.metrics.stages import StagesReport, stages
from ragtriage.metrics.summary import MetricReport, MetricRow, summarize

__all__ = [
    "per_case_schema",
    "CASE_FIELDS",
    "DEFAULT_KS",
    "EVIDENCE_FIELDS",
    "GAINS",
    "MEASURES",
    "EvalContext",
    "Measure",
    "MeasureError",
    "MeasureResult",
    "MetricReport",
    "MetricRow",
    "MetricsError",
    "StagesReport",
    "evaluate_run",
    "judged_report",
    "latency_report",
    "parse_ks",
    "parse_measure",
    "parse_measures",
    "per_case",
    "slices",
    "stages",
    "summarize",
]
