"""Verdict writers: terminal text, JSON, Markdown for a pull-request comment, JUnit XML for CI test views.

All four are built from ``Verdict.to_dict()``-level facts so they cannot disagree; each failing case appears
with its id, slice and defect category in every format.

JSON and Markdown are written to a file as they are made (:func:`write_json`, :func:`write_markdown`): a rule
that fails on most cases of a large run names each of them, and the whole document as one string (and its
dicts) would not fit beside the evaluation. :func:`to_json` and :func:`to_markdown` are the same writers into a
string, so a file and a string never differ.
"""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import Any, TextIO

from ragtriage.gate.outcome import RuleResult, Verdict, json_pieces
from ragtriage.safe_text import markdown_cell as md
from ragtriage.safe_text import visible

Verdicts = Verdict | Sequence[Verdict]


def _many(verdicts: Verdicts) -> list[Verdict]:
    """One verdict or several (one per candidate against the same baseline), as a list."""
    return [verdicts] if isinstance(verdicts, Verdict) else list(verdicts)


def candidates_line(verdicts: Verdicts) -> str:
    """``2 candidates against bm25: hybrid-rerank PASS, no-acl-filter FAIL``."""
    vs = _many(verdicts)
    each = ", ".join(f"{v.run_id} {'PASS' if v.passed else 'FAIL'}" for v in vs)
    return f"{len(vs)} candidates against {vs[0].baseline}: {each}"


def _case_line(f: dict[str, str] | object) -> str:
    d = f if isinstance(f, dict) else vars(f)
    return f"{d['case_id']} [{d['slice']}] {d['category']}: {d['detail']}"


def to_json(verdicts: Verdicts) -> str:
    """One verdict's dict, or for several candidates ``{"passed": all passed, "verdicts": [...]}``."""
    out = io.StringIO()
    write_json(verdicts, out)
    return out.getvalue()


def write_json(verdicts: Verdicts, out: TextIO) -> None:
    """:func:`to_json` written to ``out`` piece by piece: each failing case is encoded when it is written."""
    vs = _many(verdicts)
    body: dict[str, Any] = (
        vs[0].parts() if len(vs) == 1 else {"passed": all(v.passed for v in vs), "verdicts": (v.parts() for v in vs)}
    )
    for piece in json_pieces(body):
        out.write(piece)
    out.write("\n")


def to_text(verdicts: Verdicts) -> str:
    """Each candidate's summary, then (several candidates) one line naming each verdict."""
    return "".join(text_pieces(verdicts))


def text_pieces(verdicts: Verdicts, lines: int = 10_000) -> Iterator[str]:
    """:func:`to_text` in pieces of at most ``lines`` lines (each ending with a line break), so a console prints a
    verdict naming most cases of a large run without holding its whole text at once."""
    vs = _many(verdicts)
    every = chain.from_iterable(_text(v) for v in vs)
    if len(vs) > 1:
        every = chain(every, [candidates_line(vs)])
    while piece := list(islice(every, lines)):
        yield "\n".join(piece) + "\n"


def _text(verdict: Verdict) -> Iterator[str]:
    """The terminal summary's lines: one per rule, then every failing case under its rule."""
    head = "PASS" if verdict.passed else "FAIL"
    yield f"gate {verdict.gate_name} ({verdict.gate_path}, sha256 {verdict.gate_sha256[:12]}): {head}"
    yield (
        f"candidate {verdict.run_id} vs baseline {verdict.baseline}, dataset {verdict.dataset_version[:12]}, "
        f"ragtriage {verdict.evaluator_version}"
    )
    yield from (f"  note: {n}" for n in verdict.notes)
    for r in verdict.rules:
        yield f"  {'pass' if r.passed else 'FAIL'}  {r.rule}: {r.figure}  (needs {r.threshold})"
        yield from (f"        note: {n}" for n in r.notes)
        yield from (f"        {_case_line(f)}" for f in r.failures)
    failed = [r for r in verdict.rules if not r.passed]
    yield (
        f"{len(verdict.rules) - len(failed)}/{len(verdict.rules)} rules passed"
        + (f"; {verdict.n_failing_cases} failing case(s)" if failed else "")
    )


def to_markdown(verdicts: Verdicts) -> str:
    """One section per candidate (several: preceded by a line naming each verdict)."""
    out = io.StringIO()
    write_markdown(verdicts, out)
    return out.getvalue()


def write_markdown(verdicts: Verdicts, out: TextIO) -> None:
    """:func:`to_markdown` written to ``out`` a line at a time."""
    vs = _many(verdicts)
    if len(vs) > 1:
        out.write(f"**{md(candidates_line(vs))}**\n\n")
    for i, verdict in enumerate(vs):
        if i:
            out.write("\n")
        for line in _markdown(verdict):
            out.write(line + "\n")


def _markdown(verdict: Verdict) -> Iterator[str]:
    """The lines of one verdict's section; its failing cases are read as they are written."""
    icon = "✅ passed" if verdict.passed else "❌ failed"
    yield from [
        f"### ragtriage gate {md(verdict.gate_name)}: {icon}",
        "",
        f"Candidate {md(verdict.run_id)} vs baseline {md(verdict.baseline)} · dataset "
        f"`{md(verdict.dataset_version[:12])}` · gate sha256 `{verdict.gate_sha256[:12]}` · ragtriage "
        f"{md(verdict.evaluator_version)}",
        *(f"\n**{md(n)}**" for n in verdict.notes),
        "",
        "| Rule | Result | Figure | Threshold |",
        "|---|---|---|---|",
    ]
    for r in verdict.rules:
        yield f"| {md(r.rule)} | {'pass' if r.passed else '**FAIL**'} | {md(r.figure)} | {md(r.threshold)} |"
    notes = [(r.rule, n) for r in verdict.rules for n in r.notes]
    if notes:
        yield from ["", *[f"- {md(rule)}: {md(n)}" for rule, n in notes]]
    yield from _cost_markdown(verdict)
    n_cases = verdict.n_failing_cases
    if n_cases:
        yield from [
            "",
            f"<details open><summary>{n_cases} failing case(s)</summary>",
            "",
            "| Rule | Case | Slice | Category | Detail |",
            "|---|---|---|---|---|",
        ]
        for c in verdict.iter_failing_cases():
            cells = (c["rule"], c["case_id"], c["slice"], c["category"], c["detail"])
            yield "| " + " | ".join(md(x) for x in cells) + " |"
        yield from ["", "</details>"]


def _cost_markdown(verdict: Verdict) -> list[str]:
    """What each defect category costs the candidate: where triage starts."""
    rows = [c for c in verdict.category_costs if c["cases"]]
    if not verdict.cost_summary:
        return []
    out = ["", f"**What each category costs:** {md(verdict.cost_summary)}"]
    if rows:
        out += ["", f"| Category | {md(rows[0]['measure'])} lost | Failing cases |", "|---|---|---|"]
        out += [f"| {md(c['category'])} | {c['cost']:.4f} | {c['cases']} |" for c in rows]
    return out


def _xml(text: object) -> str:
    """Text for XML: control characters are not even legal in XML 1.0, so they are made visible first
    (ElementTree then escapes ``<`` and ``&``)."""
    return visible(text, keep_newlines=True)


def _testcase(parent: ET.Element, suite: str, r: RuleResult) -> None:
    case = ET.SubElement(parent, "testcase", classname=_xml(f"ragtriage.gate.{suite}"), name=_xml(r.rule), time="0")
    if r.passed:
        if r.notes:
            ET.SubElement(case, "system-out").text = _xml("\n".join(r.notes))
        return
    body = [f"{r.figure} (needs {r.threshold})", *r.notes, *(_case_line(f) for f in r.failures)]
    message = _xml(f"{r.figure} (needs {r.threshold})")
    fail = ET.SubElement(case, "failure", message=message, type=_xml(r.kind))
    fail.text = _xml("\n".join(body))


def write_junit(verdicts: Verdicts, out: TextIO) -> None:
    """JUnit XML: one testsuite per gate and candidate, one testcase per rule; a failure lists its failing cases
    in one text."""
    vs = _many(verdicts)
    tests = sum(len(v.rules) for v in vs)
    failed = sum(not r.passed for v in vs for r in v.rules)
    root = ET.Element("testsuites", name="ragtriage gate", tests=str(tests), failures=str(failed))
    for verdict in vs:
        _suite(root, verdict, f"{verdict.gate_name} [{verdict.run_id}]" if len(vs) > 1 else verdict.gate_name)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")


def _suite(root: ET.Element, verdict: Verdict, name: str) -> None:
    failed = sum(not r.passed for r in verdict.rules)
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_xml(name),
        tests=str(len(verdict.rules)),
        failures=str(failed),
        errors="0",
        skipped="0",
        timestamp=verdict.evaluated_at.isoformat(timespec="seconds"),
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("run_id", verdict.run_id),
        ("baseline", verdict.baseline),
        ("dataset_version", verdict.dataset_version),
        ("gate_sha256", verdict.gate_sha256),
        ("evaluator_version", verdict.evaluator_version),
    ):
        ET.SubElement(props, "property", name=key, value=_xml(value))
    for r in verdict.rules:
        _testcase(suite, verdict.gate_name, r)
