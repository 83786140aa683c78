"""The defect categories a failure is filed under, written once: the classifier's verdicts and a person's triage
(notes) use the same names, so the two can be compared and counted together."""

from __future__ import annotations

CATEGORIES = ("dataset", "ingestion", "ranking", "security")
