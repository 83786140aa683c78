"""Verdict writers: terminal text, JSON, Markdown for a pull-request comment, JUnit XML for CI test views.

All four are built from ``Verdict.to_dict()``-level facts so they cannot disagree; each failing case appears
with its id, slice and defect category in every format.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from ragtriage.gate.outcome import RuleResult, Verdict

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
    vs = _many(verdicts)
    body = (
        vs[0].to_dict()
        if len(vs) == 1
        else {"passed": all(v.passed for v in vs), "verdicts": [v.to_dict() for v in vs]}
    )
    return json.dumps(body, indent=2, default=str, ensure_ascii=False) + "\n"


def to_text(verdicts: Verdicts) -> str:
    """Each candidate's summary, then (several candidates) one line naming each verdict."""
    vs = _many(verdicts)
    text = "".join(_text(v) for v in vs)
    return text if len(vs) == 1 else text + candidates_line(vs) + "\n"


def _text(verdict: Verdict) -> str:
    """The terminal summary: one line per rule, then every failing case under its rule."""
    head = "PASS" if verdict.passed else "FAIL"
    lines = [
        f"gate {verdict.gate_name} ({verdict.gate_path}, sha256 {verdict.gate_sha256[:12]}): {head}",
        f"candidate {verdict.run_id} vs baseline {verdict.baseline}, dataset {verdict.dataset_version[:12]}, "
        f"ragtriage {verdict.evaluator_version}",
    ]
    for r in verdict.rules:
        lines.append(f"  {'pass' if r.passed else 'FAIL'}  {r.rule}: {r.figure}  (needs {r.threshold})")
        lines += [f"        note: {n}" for n in r.notes]
        lines += [f"        {_case_line(f)}" for f in r.failures]
    failed = [r for r in verdict.rules if not r.passed]
    lines.append(
        f"{len(verdict.rules) - len(failed)}/{len(verdict.rules)} rules passed"
        + (f"; {len(verdict.failing_cases())} failing case(s)" if failed else "")
    )
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(verdicts: Verdicts) -> str:
    """One section per candidate (several: preceded by a line naming each verdict)."""
    vs = _many(verdicts)
    head = [] if len(vs) == 1 else [f"**{_md(candidates_line(vs))}**\n"]
    return "\n".join(head + [_markdown(v) for v in vs])


def _markdown(verdict: Verdict) -> str:
    icon = "✅ passed" if verdict.passed else "❌ failed"
    out = [
        f"### ragtriage gate `{_md(verdict.gate_name)}`: {icon}",
        "",
        f"Candidate `{_md(verdict.run_id)}` vs baseline `{_md(verdict.baseline)}` · dataset "
        f"`{verdict.dataset_version[:12]}` · gate sha256 `{verdict.gate_sha256[:12]}` · ragtriage "
        f"{_md(verdict.evaluator_version)}",
        "",
        "| Rule | Result | Figure | Threshold |",
        "|---|---|---|---|",
    ]
    out += [
        f"| `{_md(r.rule)}` | {'pass' if r.passed else '**FAIL**'} | {_md(r.figure)} | {_md(r.threshold)} |"
        for r in verdict.rules
    ]
    notes = [(r.rule, n) for r in verdict.rules for n in r.notes]
    if notes:
        out += ["", *[f"- `{_md(rule)}`: {_md(n)}" for rule, n in notes]]
    out += _cost_markdown(verdict)
    cases = verdict.failing_cases()
    if cases:
        out += [
            "",
            f"<details open><summary>{len(cases)} failing case(s)</summary>",
            "",
            "| Rule | Case | Slice | Category | Detail |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| `{_md(c['rule'])}` | `{_md(c['case_id'])}` | {_md(c['slice'])} | {_md(c['category'])} | "
            f"{_md(c['detail'])} |"
            for c in cases
        ]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"


def _cost_markdown(verdict: Verdict) -> list[str]:
    """What each defect category costs the candidate: where triage starts."""
    rows = [c for c in verdict.category_costs if c["cases"]]
    if not verdict.cost_summary:
        return []
    out = ["", f"**What each category costs:** {_md(verdict.cost_summary)}"]
    if rows:
        out += ["", f"| Category | {_md(rows[0]['measure'])} lost | Failing cases |", "|---|---|---|"]
        out += [f"| {_md(c['category'])} | {c['cost']:.4f} | {c['cases']} |" for c in rows]
    return out


def _testcase(parent: ET.Element, suite: str, r: RuleResult) -> None:
    case = ET.SubElement(parent, "testcase", classname=f"ragtriage.gate.{suite}", name=r.rule, time="0")
    if r.passed:
        if r.notes:
            ET.SubElement(case, "system-out").text = "\n".join(r.notes)
        return
    body = [f"{r.figure} (needs {r.threshold})", *r.notes, *(_case_line(f) for f in r.failures)]
    fail = ET.SubElement(case, "failure", message=f"{r.figure} (needs {r.threshold})", type=r.kind)
    fail.text = "\n".join(body)


def to_junit(verdicts: Verdicts) -> str:
    """JUnit XML: one testsuite per gate and candidate, one testcase per rule; a failure lists its failing cases."""
    vs = _many(verdicts)
    tests = sum(len(v.rules) for v in vs)
    failed = sum(not r.passed for v in vs for r in v.rules)
    root = ET.Element("testsuites", name="ragtriage gate", tests=str(tests), failures=str(failed))
    for verdict in vs:
        _suite(root, verdict, f"{verdict.gate_name} [{verdict.run_id}]" if len(vs) > 1 else verdict.gate_name)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(root: ET.Element, verdict: Verdict, name: str) -> None:
    failed = sum(not r.passed for r in verdict.rules)
    suite = ET.SubElement(
        root,
        "testsuite",
        name=name,
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
        ET.SubElement(props, "property", name=key, value=value)
    for r in verdict.rules:
        _testcase(suite, verdict.gate_name, r)
