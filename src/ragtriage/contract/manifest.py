"""The two small JSON manifests (dataset.json, run.json), parsed and checked in Python: one object each.

dataset.json is checked against the JSON Schema the project ships (``contract/schemas``, generated from
``contract/fields.py``; ``jsonschema``, Draft 2020-12): a file that passes a user's own schema check passes here,
and the other way round. Each violation names the line of the offending key (the object's opening line for a
missing key) and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtriage.contract.compression import MAX_LINE
from ragtriage.contract.errors import Finding, path_findings
from ragtriage.contract.fields import INT_MAX, RUN, UNITS, Table
from ragtriage.contract.json_stream import JsonLimitError, bounded_loads
from ragtriage.contract.relevance import DEFAULT_RELEVANCE_THRESHOLD
from ragtriage.contract.schemas import shipped_schema
from ragtriage.contract.staging import compression_findings

DEFAULT_RUBRIC = {"0": "irrelevant", "1": "related", "2": "useful", "3": "sufficient"}


@dataclass
class DatasetManifest:
    name: str
    version: str
    unit: str
    relevance_threshold: int = DEFAULT_RELEVANCE_THRESHOLD
    grade_min: int = 0
    grade_max: int = 3
    rubric: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_RUBRIC))
    corpus_snapshot: str | None = None
    created_at: str | None = None
    rubric_version: str | None = None
    acl_required: bool = False
    raw: dict[str, Any] = field(default_factory=dict)
    grade_map: dict[int, int] = field(default_factory=dict)  # applied at load (--grade-map); part of the identity


def read_json_object(path: Path) -> tuple[dict[str, Any] | None, list[Finding]]:
    f = str(path)
    unreadable = path_findings(path) or compression_findings(path)  # a NUL byte is refused as in every input
    if unreadable:
        return None, unreadable
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        return None, [Finding(f, None, None, "unreadable", f"cannot be read ({exc.strerror or exc})")]
    except UnicodeDecodeError as exc:
        return None, [Finding(f, None, None, "encoding", f"not valid UTF-8 ({exc.reason} at byte {exc.start})")]
    if not text.strip():
        return None, [Finding(f, None, None, "empty-file", "file is empty")]
    try:
        obj = bounded_loads(text, MAX_LINE)
    except json.JSONDecodeError as exc:
        return None, [Finding(f, exc.lineno, None, "malformed-json", f"malformed JSON: {exc.msg}")]
    except JsonLimitError as exc:
        return None, [Finding(f, None, None, "malformed-json", exc.message)]
    if not isinstance(obj, dict):
        return None, [Finding(f, 1, None, "malformed-json", "a JSON object is expected")]
    return obj, []


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "object": (dict,),
    "string_list": (list,),
}


def _check_fields(obj: dict[str, Any], table: Table, f: str) -> list[Finding]:
    out = []
    for spec in table.fields:
        val = obj.get(spec.name)
        if val is None:
            if spec.required:
                out.append(Finding(f, None, spec.name, "missing-field", f"missing required field {spec.name!r}"))
            continue
        ok = _PY_TYPES.get(spec.kind, (object,))
        bad_bool = spec.kind in ("int", "float") and isinstance(val, bool)
        if not isinstance(val, ok) or bad_bool:
            out.append(Finding(f, None, spec.name, "wrong-type", f"wrong type: expected {spec.kind}"))
        elif spec.enum and val not in spec.enum:
            out.append(Finding(f, None, spec.name, "bad-value", f"value {val!r} is not one of {'|'.join(spec.enum)}"))
    return out


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


def parse_dataset_manifest(
    path: Path | None, *, default_name: str = "dataset", unit: str | None = None, threshold: int | None = None
) -> tuple[DatasetManifest | None, list[Finding]]:
    """Read dataset.json; without one (TREC/BEIR folders) the unit is document and the threshold 1."""
    if path is None or not path.exists():
        m = DatasetManifest(default_name, "unversioned", unit or "document", threshold if threshold is not None else 1)
        if m.unit not in UNITS:
            return None, [
                Finding("--unit", None, "unit", "unknown-unit", f"unknown unit {m.unit!r}; use {'|'.join(UNITS)}")
            ]
        return m, []
    obj, findings = read_json_object(path)
    if obj is None:
        return None, findings
    f = str(path)
    text = path.read_bytes().decode("utf-8-sig")
    findings = schema_findings(text, obj, shipped_schema("dataset"), f)
    if "unit" in obj and obj["unit"] not in UNITS:
        line = next((x.line for x in findings if x.field == "unit"), None)
        findings = [x for x in findings if x.field != "unit"]
        findings.append(
            Finding(f, line, "unit", "unknown-unit", f"unknown unit {obj['unit']!r}; use {'|'.join(UNITS)}")
        )
    scale = obj.get("grade_scale") or {}
    gmin, gmax = 0, 3
    rubric = dict(DEFAULT_RUBRIC)
    if isinstance(scale, dict):
        gmin, gmax = scale.get("min", 0), scale.get("max", 3)
        if not isinstance(gmin, int) or not isinstance(gmax, int) or gmin >= gmax:
            findings.append(Finding(f, None, "grade_scale", "bad-value", "grade_scale needs integer min < max"))
            gmin, gmax = 0, 3
        if isinstance(scale.get("rubric"), dict):
            rubric = {str(k): str(v) for k, v in scale["rubric"].items()}
    thr = obj.get("relevance_threshold", DEFAULT_RELEVANCE_THRESHOLD)
    if isinstance(thr, int) and not isinstance(thr, bool) and not gmin <= thr <= gmax:
        findings.append(
            Finding(f, None, "relevance_threshold", "bad-value", f"threshold {thr} is outside the scale {gmin}..{gmax}")
        )
    if findings:
        return None, findings
    m = DatasetManifest(
        name=str(obj["name"]),
        version=str(obj["version"]),
        unit=unit or str(obj["unit"]),
        relevance_threshold=threshold if threshold is not None else int(thr),
        grade_min=gmin,
        grade_max=gmax,
        rubric=rubric,
        corpus_snapshot=obj.get("corpus_snapshot"),
        created_at=obj.get("created_at"),
        rubric_version=obj.get("rubric_version"),
        acl_required=bool(obj.get("acl_required", False)),
        raw=obj,
    )
    return m, []


def parse_run_manifest(path: Path) -> tuple[dict[str, Any] | None, list[Finding]]:
    obj, findings = read_json_object(path)
    if obj is None:
        return None, findings
    f = str(path)
    findings = _check_fields(obj, RUN, f)
    for key in ("k", "candidate_k"):
        v = obj.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v < 1:
            findings.append(Finding(f, None, key, "bad-value", f"{key} must be >= 1, got {v}"))
        elif isinstance(v, int) and not isinstance(v, bool) and v > INT_MAX:
            findings.append(Finding(f, None, key, "out-of-range", f"{key} {v} is out of range (at most {INT_MAX})"))
    if isinstance(obj.get("run_id"), str) and not obj["run_id"].strip():
        findings.append(Finding(f, None, "run_id", "empty-id", "run_id is empty"))
    return (obj if not findings else None), findings
