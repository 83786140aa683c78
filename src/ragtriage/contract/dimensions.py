"""The slice dimensions, written once: the fields a case can be grouped by in metrics, compare, the gate, the
agreement report and the TUI.

A case dimension is a column of ``cases`` (``tags`` is a list: a case tagged ``[a, b]`` is in both slices). An
evidence dimension is a property of the case's relevant labelled units (``documents`` columns, plus the derived
``update_age`` and ``evidence_count``): a case whose relevant units are a policy and a table is in both
``doc_type`` slices. A case without a value, or without a relevant unit for an evidence dimension, is in the
:data:`NO_VALUE` slice. The membership SQL is ``ragtriage.metrics.slices.membership_sql``.
"""

from __future__ import annotations

CASE_DIMENSIONS = (
    "query_type",
    "source_family",
    "language",
    "split",
    "tags",
    "expected_scope",
    "expected_behavior",
    "critical",
    "answerable",
    "principal_tenant",
    "filter_tenant",
    "filter_language",
    "filter_region",
    "filter_product",
    "filter_doc_type",
)
EVIDENCE_DIMENSIONS = (
    "doc_type",
    "source_system",
    "chunk_kind",
    "region",
    "product",
    "tenant",
    "update_age",
    "evidence_count",
)
SLICE_DIMENSIONS = CASE_DIMENSIONS + EVIDENCE_DIMENSIONS

#: The slice of cases without a value (or without relevant evidence, for an evidence dimension).
NO_VALUE = "(none)"


class UnknownDimension(ValueError):
    """A slice dimension outside :data:`SLICE_DIMENSIONS` (the message lists them)."""


def check_dimension(by: str, allowed: tuple[str, ...] = SLICE_DIMENSIONS) -> str:
    """``by`` when it is a slice dimension (of ``allowed``), else :class:`UnknownDimension` listing the choices."""
    if by not in allowed:
        raise UnknownDimension(f"cannot slice by {by!r}; use one of: {', '.join(allowed)}")
    return by
