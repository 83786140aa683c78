"""The typed seam between the recorder and every retriever adapter (HTTP, Python callable, LangChain, LlamaIndex).

A retriever is anything with ``retrieve(request) -> response`` as a coroutine: the runner neither knows nor cares
how the hits were produced. Adapters turn their transport's failures into :class:`RetrieverError` (a per-case
error event) and their setup failures into :class:`RecordError` (exit 2 before any case is recorded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class RecordError(Exception):
    """Bad input found before recording (unreachable URL, bad template, unimportable callable): exit 2."""


class RetrieverError(Exception):
    """One request failed (HTTP 500, unreadable response, exception in the callable): an error event."""


@dataclass(frozen=True)
class Case:
    """One case of the dataset as the recorder asks it, in file order."""

    position: int
    case_id: str
    query: str
    principal: Any
    filters: Any


@dataclass(frozen=True)
class Request:
    """What one case asks the retriever: its query, the cutoffs, and the principal and filters it runs under."""

    case_id: str
    query: str
    k: int
    candidate_k: int | None
    principal: Any
    filters: Any


@dataclass(frozen=True)
class Hit:
    document_id: str
    chunk_id: str | None
    score: float | None
    snippet: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Response:
    """A retriever's answer to one request, already read through the response paths."""

    final: list[Hit]
    candidates: list[Hit] | None = None
    fallback: bool = False
    status: str | None = None
    versions: dict[str, str] = field(default_factory=dict)


class Retriever(Protocol):
    """What every adapter provides; ``describe`` is the spec written to run.json, secrets already stripped."""

    async def retrieve(self, request: Request) -> Response: ...

    async def first(self, request: Request) -> Response:
        """The pre-flight request: like ``retrieve``, but every failure is a :class:`RecordError`."""
        ...

    async def aclose(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class HttpOptions:
    """How to ask an HTTP retriever, in the command line's words (``--request``, ``--method``, ``--header``, ...)."""

    request: str | None = None
    method: str = "POST"
    headers: tuple[str, ...] = ()
    header_env: tuple[str, ...] = ()
    token_env: str | None = None
    timeout_s: float = 10.0
    retries: int = 2
    concurrency: int = 8


def pairs(items: tuple[str, ...] | list[str], option: str, sep: str) -> dict[str, str]:
    """``NAME<sep>VALUE`` items as a dict; a malformed one is a :class:`RecordError` naming the option."""
    out: dict[str, str] = {}
    for item in items:
        name, found, value = item.partition(sep)
        if not found or not name.strip():
            raise RecordError(f"{option} {item!r}: write it as NAME{sep}VALUE")
        out[name.strip()] = value.strip()
    return out
