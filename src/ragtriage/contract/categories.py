"""The defect categories a failure is filed under, written once: the classifier's verdicts and a person's triage
(notes) use the same names, so the two can be compared and counted together. The classifier may also say
:data:`UNDETERMINED` (the evidence does not decide); a person files a case under one of :data:`CATEGORIES`."""

from __future__ import annotations

CATEGORIES = ("dataset", "ingestion", "ranking", "security")
UNDETERMINED = "undetermined"
