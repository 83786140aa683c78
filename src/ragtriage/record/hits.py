"""Reading a retriever's answer into ranked hits: one rule for HTTP JSON, Python dicts, tuples and objects.

The user names where things are (``--hits``, ``--id``, ``--document-id``, ``--score``, ``--stage``, ...);
what is not named is looked up under the common keys (``document_id``/``doc_id``, ``chunk_id``/``id``,
``score``). A hit may be a mapping, an object with attributes, ``(id, score)``, ``(document_id, chunk_id,
score)``, a LangChain ``(Document, score)`` pair or a LlamaIndex ``NodeWithScore``. In a chunk-unit dataset the
id is the chunk id and the document id must be found too, because the contract's results need both.

A response path (where in an answer the hit list, ids, scores, stage and flags are) is dotted keys with optional
list indices: ``results``, ``data.hits``, ``hits[0].doc``, ``meta.index``; ``$`` (or an empty path) is the response
itself, and a leading ``$.`` is accepted as in JSONPath. The same resolver reads parsed JSON (dicts and lists) and
Python objects (attributes), and looks into an object's ``metadata`` mapping when a key is not on the object
itself, which is where LangChain Documents and LlamaIndex nodes keep ids and scores.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ragtriage.contract.fields import EVENT_STATUSES, STAGES
from ragtriage.record.types import Hit, RecordError, Response, RetrieverError
from ragtriage.safe_text import visible

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


SNIPPET_CHARS = 160


def _keys(*names: str) -> tuple[Path, ...]:
    return tuple(parse_path(n) for n in names)


HIT_LISTS = _keys("final", "hits", "results", "documents", "nodes", "data")
CANDIDATE_LISTS = _keys("candidates", "candidate")
IDS = _keys("chunk_id", "id", "_id", "node_id")
DOCUMENT_IDS = _keys("document_id", "doc_id", "docid", "docno", "ref_doc_id", "source")
SCORES = _keys("score", "relevance_score", "_score", "similarity")
SNIPPETS = _keys("snippet", "page_content", "text")
STAGE_KEYS = _keys("stage")
FALLBACKS = _keys("fallback")
STATUSES = _keys("status")
VERSIONS = parse_path("versions")


@dataclass(frozen=True)
class ResponseShape:
    """Where the parts of a response are; ``None`` means "look under the common keys"."""

    unit: str = "chunk"
    hits: Path | None = None
    candidate_hits: Path | None = None
    id: Path | None = None
    document_id: Path | None = None
    score: Path | None = None
    stage: Path | None = None
    snippet: Path | None = None
    fallback: Path | None = None
    status: Path | None = None
    versions: dict[str, Path] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        named = ("hits", "candidate_hits", "id", "document_id", "score", "stage", "snippet", "fallback", "status")
        out: dict[str, Any] = {k: getattr(self, k).text for k in named if getattr(self, k) is not None}
        if self.versions:
            out["versions"] = {k: v.text for k, v in self.versions.items()}
        return out

    def read(self, raw: Any) -> Response:
        """The hits and flags of one response; a hit that cannot be read is a :class:`RetrieverError`."""
        final_raw = self._list(raw, self.hits, HIT_LISTS, "hit list")
        cand_raw = None
        if self.candidate_hits is not None or not isinstance(raw, list):
            cand_raw = _list_at(raw, self.candidate_hits, CANDIDATE_LISTS)
        final_items = self._hits(final_raw)
        candidates = [h for h, _ in self._hits(cand_raw or [])] + [h for h, s in final_items if s == "candidate"]
        return Response(
            final=[h for h, s in final_items if s != "candidate"],
            candidates=candidates if cand_raw is not None or candidates else None,
            fallback=_flag(first_of(raw, (self.fallback,) if self.fallback else FALLBACKS)),
            status=self._status(raw),
            versions=self._versions(raw),
        )

    def _status(self, raw: Any) -> str | None:
        """The event status the response states: a named ``--status`` must hold one of the contract's values;
        a ``status`` key found by default counts only when it does (``"status": "success"`` is not ours)."""
        value = first_of(raw, (self.status,) if self.status else STATUSES)
        if value is MISSING or value is None or (self.status is None and value not in EVENT_STATUSES):
            return None
        if value not in EVENT_STATUSES:
            raise RetrieverError(f"status {value!r} is not one of {'|'.join(EVENT_STATUSES)}")
        return str(value)

    def _versions(self, raw: Any) -> dict[str, str]:
        if self.versions:
            found = {k: p.get(raw) for k, p in self.versions.items()}
        else:
            stated = VERSIONS.get(raw)
            found = {str(k): v for k, v in stated.items()} if isinstance(stated, dict) else {}
        return {k: str(v) for k, v in found.items() if v is not MISSING and v is not None}

    def check_first(self, raw: Any) -> Response:
        """Read the first response strictly: every named path must match, or the user sees the response."""
        for name, p in (("--hits", self.hits), ("--candidate-hits", self.candidate_hits)):
            if p is not None and p.get(raw) is MISSING:
                raise RecordError(f"{name} {p.text!r} matches nothing in the first response:\n{show(raw)}")
        for name, p in self.versions.items():
            if p.get(raw) is MISSING:
                raise RecordError(f"--version {name}={p.text} matches nothing in the first response:\n{show(raw)}")
        try:
            response = self.read(raw)
        except RetrieverError as exc:
            raise RecordError(f"{exc}; the first response was:\n{show(raw)}") from None
        return response

    def _list(self, raw: Any, path: Path | None, defaults: tuple[Path, ...], what: str) -> list[Any]:
        found = _list_at(raw, path, defaults)
        if found is None:
            named = f"at {path.text!r}" if path else f"under {', '.join(p.text for p in defaults)}"
            raise RetrieverError(f"no {what} {named}; name it with --hits")
        return found

    def _hits(self, items: list[Any]) -> list[tuple[Hit, str | None]]:
        return [self._hit(item, i) for i, item in enumerate(items, 1)]

    def _hit(self, item: Any, position: int) -> tuple[Hit, str | None]:
        obj, score = _unwrap(item)
        id_val = first_of(obj, (self.id,) if self.id else IDS)
        doc_val = first_of(obj, (self.document_id,) if self.document_id else DOCUMENT_IDS)
        if self.unit == "document":
            use_doc = self.document_id is not None or (self.id is None and doc_val is not MISSING)
            document, chunk = (doc_val if use_doc else id_val), MISSING
        else:
            document, chunk = doc_val, id_val
            if chunk is MISSING:
                raise RetrieverError(f"hit {position} has no chunk id (the dataset unit is chunk); name it with --id")
        if document is MISSING:
            what = "--document-id" if self.unit == "chunk" else "--id or --document-id"
            raise RetrieverError(f"hit {position} has no document id; name it with {what}")
        if self.score is not None or score is MISSING:
            score = first_of(obj, (self.score,) if self.score else SCORES)
        snippet = first_of(obj, (self.snippet,) if self.snippet else SNIPPETS)
        meta = first_of(obj, _keys("metadata"))
        stage = first_of(obj, (self.stage,) if self.stage else STAGE_KEYS)
        if stage is not MISSING and stage not in STAGES:
            raise RetrieverError(f"hit {position} has stage {stage!r}; expected one of {'|'.join(STAGES)}")
        hit = Hit(
            document_id=str(document),
            chunk_id=None if chunk is MISSING else str(chunk),
            score=_score(score, position),
            snippet=None if snippet is MISSING else str(snippet)[:SNIPPET_CHARS],
            metadata=meta if isinstance(meta, dict) else None,
        )
        return hit, None if stage is MISSING else str(stage)


def _list_at(raw: Any, path: Path | None, defaults: tuple[Path, ...]) -> list[Any] | None:
    if path is not None:
        value = path.get(raw)
    elif isinstance(raw, list | tuple):
        value = raw
    else:
        value = first_of(raw, defaults)
    if value is MISSING or value is None:
        return None if path is None or value is MISSING else []
    if not isinstance(value, list | tuple):
        raise RetrieverError(f"the hit list at {path.text if path else 'the response'!r} is not a list")
    return list(value)


def _unwrap(item: Any) -> tuple[Any, Any]:
    """A hit's object and the score carried beside it (tuples, NodeWithScore), or ``MISSING``."""
    if isinstance(item, str | int) and not isinstance(item, bool):
        return {"id": item}, MISSING
    if isinstance(item, list | tuple):
        if len(item) == 2 and not isinstance(item[0], str | int | dict):
            return item[0], item[1]
        if len(item) == 2:
            return {"id": item[0], "score": item[1]}, MISSING
        if len(item) == 3:
            return {"document_id": item[0], "chunk_id": item[1], "id": item[1], "score": item[2]}, MISSING
        raise RetrieverError(f"a hit tuple has {len(item)} items; use (id, score) or (document_id, chunk_id, score)")
    node = getattr(item, "node", None)
    if node is not None and hasattr(item, "score") and not isinstance(item, dict):
        return node, getattr(item, "score", MISSING)
    return item, MISSING


def _score(value: Any, position: int) -> float | None:
    if value is MISSING or value is None:
        return None
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise RetrieverError(f"hit {position} has score {value!r}, not a number") from None
    if isinstance(value, bool) or not math.isfinite(score):
        raise RetrieverError(f"hit {position} has score {value!r}, not a finite number")
    return score


def _flag(value: Any) -> bool:
    return value is not MISSING and value not in (None, False, 0, "", "false", "False", "no")


def show(raw: Any, limit: int = 2000) -> str:
    """A response as a person may see it: JSON (or repr), cut to ``limit``, controls made visible."""
    try:
        text = json.dumps(raw, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(raw)
    cut = text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"
    return visible(cut, keep_newlines=True)
