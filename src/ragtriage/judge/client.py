"""One chat-completions request per pair, to any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp's
server), through ``httpx.AsyncClient``.

A 429 or a 5xx answer, a timeout and a lost connection are asked again, at most ``retries`` times, by the rule of
``ragtriage.http_retry`` (the recorder's too), which also gives each attempt its deadline (``timeout_s``) and
caps the body read at :func:`body_cap` bytes, far above what ``max_tokens`` can produce. Other 4xx answers are not
retried: the request itself is wrong (a bad model name, a refused parameter) and asking again only spends the
budget. Every HTTP request, retries included, counts against ``budget``; once it is spent nothing more is sent.

The API key is read from the environment variable the user names and sent as a bearer token; it is never
stored, printed or written to a file (the endpoint is described by :func:`ragtriage.http_secrets.strip_url`).
A server may echo it (an error body quoting the Authorization header, an answer repeating it, base64 included):
every text a :class:`Reply` carries has every form of it masked (``ragtriage.http_secrets``) before anyone sees it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Any

import httpx

from ragtriage.http_retry import Answer, RetryPolicy, TooLarge, attempt
from ragtriage.http_secrets import Secrets, strip_url

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
BUDGET_SPENT = "request budget spent"


class JudgeError(ValueError):
    """A judge request that cannot be made as asked (no key in the environment, not an http(s) URL)."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    model: str
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = 0  # sent as the API's ``seed`` (OpenAI, vLLM, Ollama, llama.cpp take it); None: not sent
    max_tokens: int = 64
    timeout_s: float = 60.0
    retries: int = 4
    backoff_s: float = 1.0
    max_wait_s: float = 60.0
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise JudgeError(f"--endpoint {self.url!r}: give an http:// or https:// URL")

    @property
    def chat_url(self) -> str:
        """``URL/chat/completions`` unless the URL already names it (``http://host:8000/v1`` is enough)."""
        base = self.url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    def shown(self) -> str:
        return strip_url(self.chat_url)

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(RETRY_STATUS, self.backoff_s, self.max_wait_s)


@dataclass(frozen=True)
class Reply:
    """What one pair got: the answer text, or the error that ended its attempts."""

    text: str | None
    error: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Budget:
    """HTTP requests left to send (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.sent = 0

    def take(self) -> bool:
        """Whether one more request may be sent (counted as sent when it may)."""
        if self.limit is not None and self.sent >= self.limit:
            return False
        self.sent += 1
        return True


def api_key(endpoint: Endpoint) -> str | None:
    """The key the endpoint is asked with (None: no --api-key-env); a variable not set is a :class:`JudgeError`."""
    if endpoint.api_key_env is None:
        return None
    value = os.environ.get(endpoint.api_key_env)
    if not value:
        raise JudgeError(f"environment variable {endpoint.api_key_env} (--api-key-env) is not set or empty")
    return value


BODY_CAP_MIN = 1 << 20
BYTES_PER_TOKEN_CAP = 256  # a token is a few bytes of UTF-8; JSON escapes and the envelope add a few times that


def body_cap(max_tokens: int) -> int:
    """The most bytes of an answer read: far above any answer of ``max_tokens`` tokens, so only a server that
    ignores the limit (or sends something else) reaches it."""
    return max(BODY_CAP_MIN, BYTES_PER_TOKEN_CAP * max_tokens)


class _Spent(Exception):
    pass


class ChatClient:
    def __init__(self, endpoint: Endpoint, budget: Budget) -> None:
        self.endpoint = endpoint
        self.budget = budget
        key = api_key(endpoint)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.secrets = Secrets(headers)
        self.cap = body_cap(endpoint.max_tokens)
        self.client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(endpoint.timeout_s),
            limits=httpx.Limits(max_connections=endpoint.concurrency, max_keepalive_connections=endpoint.concurrency),
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    def body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        e = self.endpoint
        body: dict[str, Any] = {
            "model": e.model,
            "messages": messages,
            "temperature": e.temperature,
            "max_tokens": e.max_tokens,
        }
        if e.seed is not None:
            body["seed"] = e.seed
        return body

    async def ask(self, messages: list[dict[str, str]]) -> Reply:
        """The model's answer to ``messages``, after the retries a busy or failing server needs; every text in
        it has the API key masked."""
        reply = await self._ask(messages)
        mask = self.mask
        return replace(reply, text=mask(reply.text), error=mask(reply.error))

    def mask(self, text: str | None) -> str | None:
        return text if text is None else self.secrets.redact(text)

    async def _attempt(self, body: dict[str, Any]) -> Answer:
        if not self.budget.take():
            raise _Spent
        e = self.endpoint
        return await attempt(self.client, "POST", e.chat_url, deadline_s=e.timeout_s, cap=self.cap, json=body)

    async def _ask(self, messages: list[dict[str, str]]) -> Reply:
        body = self.body(messages)
        e = self.endpoint
        try:
            got = await e.retry.ask(e.retries, lambda: self._attempt(body), (TimeoutError, httpx.TransportError))
        except _Spent:
            return Reply(None, BUDGET_SPENT)
        except TooLarge:
            return Reply(None, f"the answer is larger than {self.cap} bytes: not read, not kept")
        if isinstance(got, TimeoutError | httpx.TimeoutException):
            return Reply(None, f"no complete answer within {e.timeout_s:g} s (--timeout)")
        if isinstance(got, Exception):
            return Reply(None, f"{type(got).__name__}: {got}")
        if got.status >= 400:
            return Reply(None, f"HTTP {got.status}: {got.text[:300]}")
        return _reply(got.body)


def _reply(raw: bytes) -> Reply:
    """The answer text of a chat-completions response; a body of another shape is an error, not an answer."""
    try:
        data = json.loads(raw)
        text = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return Reply(None, f"not a chat-completions response: {raw.decode('utf-8', errors='replace')[:300]}")
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return Reply(
        text if isinstance(text, str) else None,
        None if isinstance(text, str) else "the answer's content is not text",
        _int(usage.get("prompt_tokens")),
        _int(usage.get("completion_tokens")),
    )


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
