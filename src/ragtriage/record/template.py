"""The HTTP request template: JSON with ``{query}``, ``{k}``, ``{principal}``, ``{filters}``, ``{case_id}`` holes.

Values are never pasted into the JSON text. A placeholder outside a string (``"k": {k}``) becomes a marker
string before the template is parsed; a string that is exactly one placeholder (``"q": "{query}"``) takes the
value itself, whatever its JSON type; a placeholder inside a longer string (``"id": "case-{case_id}"``) is
replaced by the value's text. A query holding quotes, braces or ``"}, "admin": true`` therefore stays one
string value, and the template is checked as JSON once, before any request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ragtriage.record.types import RecordError, Request

NAMES = ("query", "k", "candidate_k", "principal", "filters", "case_id")
_HOLE = re.compile(r"\{(" + "|".join(NAMES) + r")\}")
_MARK = "\u0000ragtriage:{}\u0000"
_BRACES = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Template:
    text: str
    parsed: Any

    def render(self, request: Request) -> Any:
        values = {
            "query": request.query,
            "k": request.k,
            "candidate_k": request.candidate_k,
            "principal": request.principal,
            "filters": request.filters,
            "case_id": request.case_id,
        }
        return _fill(self.parsed, values)


DEFAULT_TEMPLATE = (
    '{"query": "{query}", "k": {k}, "candidate_k": {candidate_k}, "principal": {principal}, '
    '"filters": {filters}, "case_id": "{case_id}"}'
)


def parse_template(text: str) -> Template:
    """Check the template once: valid JSON with its placeholders, and no unknown ``{name}`` placeholder."""
    unknown = sorted({m.group(1) for m in _BRACES.finditer(text)} - set(NAMES))
    if unknown:
        raise RecordError(
            f"--request has unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            f"use {', '.join('{' + n + '}' for n in NAMES)}"
        )
    marked = _mark_bare(text)
    try:
        parsed = json.loads(marked)
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"--request is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); placeholders "
            f'outside quotes are allowed only where a JSON value goes, e.g. {{"k": {{k}}}}'
        ) from None
    return Template(text, parsed)


def _mark_bare(text: str) -> str:
    """Replace placeholders that stand outside JSON strings with marker strings, leaving strings untouched."""
    out: list[str] = []
    i, in_str = 0, False
    while i < len(text):
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif ch == "{" and (m := _HOLE.match(text, i)):
            out.append(json.dumps(_MARK.format(m.group(1))))
            i = m.end()
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _fill(node: Any, values: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        return {_text(_fill(k, values)): _fill(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, values) for v in node]
    if not isinstance(node, str):
        return node
    for name in NAMES:
        if node in (_MARK.format(name), "{" + name + "}"):
            return values[name]
    if "{" not in node:
        return node
    return _HOLE.sub(lambda m: _text(values[m.group(1)]), node)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
