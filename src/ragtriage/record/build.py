"""From the command line's words to a retriever: which adapter a ``--retriever`` names, and the small parsers
for ``--header``, ``--set``, ``--version`` and ``--filters-applied`` (kept here, outside the CLI, so the Python
API and the tests read them the same way)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragtriage.record.hits import ResponseShape, parse_path
from ragtriage.record.types import RecordError, Retriever


@dataclass(frozen=True)
class HttpOptions:
    request: str | None = None
    method: str = "POST"
    headers: tuple[str, ...] = ()
    header_env: tuple[str, ...] = ()
    token_env: str | None = None
    timeout_s: float = 10.0
    retries: int = 2
    concurrency: int = 8


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


def pairs(items: tuple[str, ...] | list[str], option: str, sep: str) -> dict[str, str]:
    """``NAME<sep>VALUE`` items as a dict; a malformed one is a :class:`RecordError` naming the option."""
    out: dict[str, str] = {}
    for item in items:
        name, found, value = item.partition(sep)
        if not found or not name.strip():
            raise RecordError(f"{option} {item!r}: write it as NAME{sep}VALUE")
        out[name.strip()] = value.strip()
    return out


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
        from ragtriage.record.http_adapter import DEFAULT_TEMPLATE, HttpRetriever, HttpSpec, parse_template

        env = pairs(list(http.header_env), "--header-env", "=")
        if http.token_env:
            env["Authorization"] = http.token_env
        method = http.method.upper()
        if method not in ("GET", "POST", "PUT"):
            raise RecordError(f"--method {http.method!r}: use POST, GET or PUT")
        return HttpRetriever(
            HttpSpec(
                url=spec,
                template=parse_template(http.request or DEFAULT_TEMPLATE),
                shape=shape,
                method=method,
                headers=pairs(list(http.headers), "--header", ":"),
                env_headers=env,
                timeout_s=http.timeout_s,
                retries=http.retries,
                concurrency=http.concurrency,
            )
        )
    raise RecordError(
        f"--retriever {spec!r}: give an http(s):// URL or python:module:function (python:file.py:function)"
    )
