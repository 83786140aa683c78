"""Validate a JSON manifest (dataset.json) against the JSON Schema the project ships, with line-precise findings.

The schemas in ``contract/schemas`` are generated from ``contract/fields.py`` and published for users; checking
the manifest with the same schema (``jsonschema``, Draft 2020-12) means a file that passes a user's own schema
check passes here, and the other way round. Each violation becomes one :class:`Finding` naming the file, the line
of the offending key (the object's opening line for a missing key) and the field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragtriage.contract.errors import Finding

_CODES = {"required": "missing-field", "type": "wrong-type", "anyOf": "wrong-type", "enum": "bad-value"}


def _line_of(text: str, path: list[str | int]) -> int:
    """The 1-based line of the last key of ``path`` (searched in order, so nested keys follow their parent)."""
    pos = text.find("{")
    for key in path:
        if not isinstance(key, str):
            continue
        found = re.compile(re.escape(json.dumps(key)) + r"\s*:").search(text, max(pos, 0))
        if found is None:
            break
        pos = found.start()
    return text.count("\n", 0, max(pos, 0)) + 1


def schema_findings(text: str, obj: dict[str, Any], schema: dict[str, Any], file: str) -> list[Finding]:
    """Every violation of ``schema`` by ``obj`` (parsed from ``text``), one finding per violation, in file order."""
    from jsonschema import Draft202012Validator

    out: list[tuple[int, Finding]] = []
    for error in Draft202012Validator(schema).iter_errors(obj):
        path = list(error.absolute_path)
        if error.validator == "required":
            field = str(error.message.split("'")[1]) if "'" in error.message else None
            message = f"missing required field {field!r}"
            line = _line_of(text, path)
        else:
            field = ".".join(str(p) for p in path) or None
            expected = error.schema.get("type") if isinstance(error.schema, dict) else None
            if error.validator == "enum":
                allowed = "|".join(str(v) for v in error.validator_value)
                message = f"value {error.instance!r} is not one of {allowed}"
            elif expected or error.validator in ("type", "anyOf"):
                message = f"wrong type: {json.dumps(error.instance)[:40]} ({error.message[:80]})"
            else:
                message = error.message[:200]
            line = _line_of(text, path)
        code = _CODES.get(str(error.validator), "bad-value")
        out.append((line, Finding(file, line, field, code, message)))
    return [f for _, f in sorted(out, key=lambda x: x[0])]
