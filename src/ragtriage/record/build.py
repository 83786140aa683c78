"""From the command line's words to a retriever: which adapter a ``--retriever`` names, and the small parsers
for ``--set``, ``--version`` and ``--filters-applied`` (``--header``'s is ``types.pairs``; kept outside the CLI, so
the Python API and the tests read them the same way)."""

from __future__ import annotations

from typing import Any

from ragtriage.record.hits import ResponseShape, parse_path
from ragtriage.record.types import HttpOptions, RecordError, Retriever, pairs

__all__ = ["HttpOptions", "filters_applied", "make_retriever", "pairs", "response_shape"]


def response_shape(
    unit: str, paths: dict[str, str | None], versions: list[str] | tuple[str, ...] = ()
) -> ResponseShape:
    """A :class:`ResponseShape` from path texts by field name (``hits``, ``id``, ``document_id``, ...)."""
    unknown = set(paths) - set(ResponseShape.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown response path field(s): {', '.join(sorted(unknown))}")
    parsed: dict[str, Any] = {k: parse_path(v) for k, v in paths.items() if v is not None}
    named = {k: parse_path(v) for k, v in pairs(versions, "--version", "=").items()}
    return ResponseShape(unit=unit, versions=named, **parsed)


def filters_applied(text: str | None) -> dict[str, bool] | None:
    """``acl,tenant,effective_on=false`` → ``{"acl": True, "tenant": True, "effective_on": False}``."""
    if text is None:
        return None
    out: dict[str, bool] = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, _, value = item.partition("=")
        if value.lower() not in ("", "true", "false", "yes", "no", "1", "0"):
            raise RecordError(f"--filters-applied {item!r}: the value must be true or false")
        out[name.strip()] = value.lower() in ("", "true", "yes", "1")
    return out


def make_retriever(spec: str, shape: ResponseShape, http: HttpOptions) -> Retriever:
    """``http(s)://...`` is the HTTP adapter; ``python:module:attr`` a callable, LangChain or LlamaIndex object."""
    if spec.startswith("python:"):
        from ragtriage.record.python_adapter import PythonRetriever

        return PythonRetriever(spec.removeprefix("python:"), shape)
    if spec.startswith(("http://", "https://")):
        from ragtriage.record.http_adapter import HttpRetriever

        return HttpRetriever(spec, shape, http)
    raise RecordError(
        f"--retriever {spec!r}: give an http(s):// URL or python:module:function (python:file.py:function)"
    )
