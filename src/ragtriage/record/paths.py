"""Response paths: where in a retriever's answer the hit list, ids, scores, stage and flags are.

A path is dotted keys with optional list indices: ``results``, ``data.hits``, ``hits[0].doc``, ``meta.index``;
``$`` (or an empty path) is the response itself, and a leading ``$.`` is accepted as in JSONPath. The same
resolver reads parsed JSON (dicts and lists) and Python objects (attributes), and looks into an object's
``metadata`` mapping when a key is not on the object itself, which is where LangChain Documents and LlamaIndex
nodes keep ids and scores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ragtriage.record.types import RecordError

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class Path:
    text: str
    steps: tuple[str | int, ...]

    def get(self, obj: Any) -> Any:
        """The value at this path, or ``MISSING``."""
        for step in self.steps:
            obj = _step(obj, step)
            if obj is MISSING:
                return MISSING
        return obj


def parse_path(text: str) -> Path:
    """Parse ``a.b[0].c``; a malformed path is a :class:`RecordError` naming it."""
    body = text.strip()
    if body in ("", "$"):
        return Path(text, ())
    if body.startswith("$."):
        body = body[2:]
    steps: list[str | int] = []
    pos = 0
    for m in _SEGMENT.finditer(body):
        gap = body[pos : m.start()]
        if gap not in ("", ".") or (gap == "" and pos and m.group(1)):
            raise RecordError(f"response path {text!r} is malformed near {body[pos:]!r}; write it like data.hits[0].id")
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if pos != len(body) or not steps:
        raise RecordError(f"response path {text!r} is malformed; write it like data.hits[0].id")
    return Path(text, tuple(steps))


def _step(obj: Any, step: str | int) -> Any:
    if isinstance(step, int):
        if isinstance(obj, list | tuple) and -len(obj) <= step < len(obj):
            return obj[step]
        return MISSING
    if isinstance(obj, dict):
        return obj.get(step, MISSING)
    if obj is None or isinstance(obj, str | int | float | list | tuple):
        return MISSING
    value = getattr(obj, step, MISSING)
    if value is MISSING:
        meta = getattr(obj, "metadata", None)
        if isinstance(meta, dict):
            return meta.get(step, MISSING)
    return value


def first_of(obj: Any, paths: tuple[Path, ...]) -> Any:
    """The value at the first path that matches (and is not None), else ``MISSING``."""
    for p in paths:
        v = p.get(obj)
        if v is not MISSING and v is not None:
            return v
    return MISSING
