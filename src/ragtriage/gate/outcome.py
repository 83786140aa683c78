"""What a gate evaluation produces: one result per rule, the failing cases it names, and the verdict.

A failing rule can name every case of a large run, twice in the verdict's document (under its rule, and in
``failing_cases``). :meth:`Verdict.parts` lays the document out with those lists as iterators, so a writer
(``gate.reports``, the stored verdict) streams them with :func:`json_pieces` a case at a time;
:meth:`Verdict.to_dict` is the same layout held whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class FailingCase:
    """A case a rule failed on: its id, the slice it sits in, the defect category and what was wrong."""

    case_id: str
    slice: str
    category: str
    detail: str


@dataclass(frozen=True)
class RuleResult:
    """One rule's pass/fail with its figure beside the threshold it was held to."""

    rule: str  # stable name, e.g. "leakage", "regression:R@10", "slice_minimum:doc_type=table:nDCG@5"
    kind: str
    passed: bool
    figure: str
    threshold: str
    value: float | None = None
    failures: tuple[FailingCase, ...] = ()
    notes: tuple[str, ...] = ()
    #: a paired rule's interval of ``value`` and p-value, as ``compare`` prints them (``gate.compare``)
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    #: whether the data can carry the rule: False for leakage on data without access rules, for a rule over
    #: critical or negative cases the dataset has none of, for reproducibility the gate file does not ask for
    applies: bool = True


@dataclass(frozen=True)
class Verdict:
    gate_name: str
    gate_path: str
    gate_sha256: str
    gate_mtime: datetime
    run_id: str
    baseline: str
    dataset_version: str
    evaluator_version: str
    evaluated_at: datetime
    rules: tuple[RuleResult, ...]
    notes: tuple[str, ...] = field(default=())
    # what each defect category costs the candidate at its own k (classify.CostReport, as plain rows)
    category_costs: tuple[dict[str, Any], ...] = field(default=())
    cost_summary: str = ""

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rules)

    def iter_failing_cases(self) -> Iterator[dict[str, str]]:
        """Every failing case id once per rule, with slice, category and the rule that named it, one at a time."""
        return ({"rule": r.rule, **asdict(f)} for r in self.rules if not r.passed for f in r.failures)

    @property
    def n_failing_cases(self) -> int:
        """How many rows :meth:`iter_failing_cases` gives."""
        return sum(len(r.failures) for r in self.rules if not r.passed)

    def to_dict(self) -> dict[str, Any]:
        """The verdict's document (what ``--json`` writes and ``gate_verdicts.report`` holds)."""
        body = self.parts()
        body["rules"] = [{**r, "failures": list(r["failures"])} for r in body["rules"]]
        body["failing_cases"] = list(body["failing_cases"])
        return body

    def parts(self) -> dict[str, Any]:
        """:meth:`to_dict`'s layout, key for key, with each rule's ``failures`` and ``failing_cases`` as iterators
        (read once), so a writer never holds them whole."""
        return {
            "gate": {
                "name": self.gate_name,
                "path": self.gate_path,
                "sha256": self.gate_sha256,
                "mtime": self.gate_mtime.isoformat(),
            },
            "run_id": self.run_id,
            "baseline": self.baseline,
            "dataset_version": self.dataset_version,
            "evaluator_version": self.evaluator_version,
            "evaluated_at": self.evaluated_at.isoformat(),
            "passed": self.passed,
            "rules": [
                {
                    # the rule's other fields as asdict gives them, without first copying every failure
                    **{x.name: getattr(r, x.name) for x in fields(r) if x.name != "failures"},
                    "failures": (asdict(f) for f in r.failures),
                }
                for r in self.rules
            ],
            "failing_cases": self.iter_failing_cases(),
            "category_costs": list(self.category_costs),
            "cost_summary": self.cost_summary,
            "notes": list(self.notes),
        }


def json_pieces(value: object, level: int = 0, *, indent: int | None = 2, ensure_ascii: bool = False) -> Iterator[str]:
    """``json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, default=str)`` in pieces, byte for byte, where
    every iterator in ``value`` (a lazy list) is read one item at a time; a dict or list holding one is opened
    here, anything else is dumped whole (re-indented ``level`` deep: a JSON string never holds a raw line break,
    so every line break is the layout's)."""
    if isinstance(value, dict) and any(isinstance(v, Iterator | dict | list) for v in value.values()):
        items: Iterator[tuple[str, object]] = ((f"{_dumps(k, 0, indent, ensure_ascii)}: ", v) for k, v in value.items())
        yield from _container(items, "{}", level, indent, ensure_ascii)
    elif isinstance(value, Iterator) or (isinstance(value, list) and any(isinstance(v, dict) for v in value)):
        yield from _container((("", v) for v in value), "[]", level, indent, ensure_ascii)
    else:
        yield _dumps(value, level, indent, ensure_ascii)


def _container(
    items: Iterator[tuple[str, object]], brackets: str, level: int, indent: int | None, ensure_ascii: bool
) -> Iterator[str]:
    pad = "" if indent is None else "\n" + " " * (indent * (level + 1))
    sep = brackets[0]
    for key, item in items:
        yield f"{sep}{pad}{key}"
        yield from json_pieces(item, level + 1, indent=indent, ensure_ascii=ensure_ascii)
        sep = "," if indent is not None else ", "
    if sep == brackets[0]:
        yield brackets
    else:
        yield ("" if indent is None else "\n" + " " * (indent * level)) + brackets[1]


def _dumps(value: object, level: int, indent: int | None, ensure_ascii: bool) -> str:
    text = json.dumps(value, indent=indent, default=str, ensure_ascii=ensure_ascii)
    return text.replace("\n", "\n" + " " * (indent * level)) if indent and level else text
