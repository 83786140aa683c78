"""The HTTP retriever: one JSON request per case through ``httpx.AsyncClient``, hits read by response paths.

Connection failures are retried by httpx's own transport (``retries``: connect errors only, never a request the
server may have acted on). A 429, 502, 503 or 504 is retried as many times, after the Retry-After the server
asks for or an exponential backoff (``RETRY``, stated in run.json); any other HTTP error is the case's answer.
Header values (``--header``, ``--header-env``, ``--token-env``) are sent but never described: run.json records
header names and the environment variable names, not their values; the URL loses its password and any
secret-looking query parameter, and the template the string values of secret-looking keys. Every message the
adapter makes (an error body echoing the Authorization header, an exception naming the URL) has every secret it
knows of replaced before anyone writes it (``Secrets``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import httpx

from ragtriage.http_retry import RetryPolicy
from ragtriage.http_secrets import REDACTED, redact, secret_forms
from ragtriage.record.hits import ResponseShape, show
from ragtriage.record.template import Template
from ragtriage.record.types import RecordError, Request, Response, RetrieverError
from ragtriage.safe_text import visible

SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "auth", "sig", "credential")
RETRY = RetryPolicy(statuses=frozenset({429, 502, 503, 504}), backoff_s=0.5, max_wait_s=30.0)
"""HTTP answers worth asking again (rate limited, a gateway or the service briefly down), the first backoff
(doubled per retry) and the longest wait: a Retry-After beyond it ends the retries (``ragtriage.http_retry``)."""


@dataclass(frozen=True)
class HttpSpec:
    url: str
    template: Template
    shape: ResponseShape
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    env_headers: dict[str, str] = field(default_factory=dict)  # header name -> environment variable name
    timeout_s: float = 10.0
    retries: int = 2
    concurrency: int = 8


def header_values(spec: HttpSpec) -> dict[str, str]:
    """Every header to send; an environment variable that is not set is a :class:`RecordError`."""
    out = dict(spec.headers)
    for name, var in spec.env_headers.items():
        value = os.environ.get(var)
        if not value:
            raise RecordError(f"environment variable {var} (for header {name}) is not set or empty")
        out[name] = f"Bearer {value}" if name.lower() == "authorization" and " " not in value else value
    return out


_SECRET_VALUE = re.compile(r'("[^"]*(?:' + "|".join(SECRET_WORDS) + r')[^"]*"\s*:\s*)"(?:[^"\\]|\\.)*"', re.IGNORECASE)


def strip_template(text: str) -> str:
    """The request template with the string value of every secret-looking key (``"api_key": "..."``) redacted."""
    return _SECRET_VALUE.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)


def strip_url(url: str) -> str:
    """The URL without its password and with secret-looking query values redacted."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    if parts.username:
        netloc = f"{parts.username}:{REDACTED}@{netloc}" if parts.password else f"{parts.username}@{netloc}"
    query = [
        (k, REDACTED if any(w in k.lower() for w in SECRET_WORDS) else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="<>"), ""))


class Secrets:
    """Every secret the recorder sends (header values, the token of a ``Bearer`` header, URL credentials and their
    Basic form, secret-looking query and template values), to be replaced in any text it writes."""

    def __init__(self, spec: HttpSpec, headers: dict[str, str]) -> None:
        found: set[str] = set()
        for value in headers.values():
            found |= {value, *value.split(" ", 1)[1:]}
        parts = urlsplit(spec.url)
        if parts.password:
            user, password = unquote(parts.username or ""), unquote(parts.password)
            found |= {parts.password, password, base64.b64encode(f"{user}:{password}".encode()).decode()}
        found |= {v for k, v in parse_qsl(parts.query) if any(w in k.lower() for w in SECRET_WORDS)}
        found |= {m.group(0).split(":", 1)[1].strip().strip('"') for m in _SECRET_VALUE.finditer(spec.template.text)}
        self.values = secret_forms(found)

    def redact(self, text: str) -> str:
        return redact(text, self.values)


class HttpRetriever:
    def __init__(self, spec: HttpSpec) -> None:
        parts = urlsplit(spec.url)
        if parts.scheme not in ("http", "https"):
            raise RecordError(f"--retriever {spec.url!r}: an HTTP retriever needs an http:// or https:// URL")
        if spec.method == "GET" and not isinstance(spec.template.parsed, dict):
            raise RecordError("--method GET sends the template's keys as query parameters: it must be a JSON object")
        if (parts.username or parts.password) and any(
            h.lower() == "authorization" for h in [*spec.headers, *spec.env_headers]
        ):
            raise RecordError(
                "the --retriever URL holds credentials (user:password@) and an Authorization header is given too: "
                "the URL's would replace the header; remove one of them"
            )
        self.spec = spec
        headers = header_values(spec)
        self.secrets = Secrets(spec, headers)
        transport = httpx.AsyncHTTPTransport(retries=spec.retries)
        self.client = httpx.AsyncClient(
            transport=transport,
            headers=headers,
            timeout=httpx.Timeout(spec.timeout_s),
            limits=httpx.Limits(max_connections=spec.concurrency, max_keepalive_connections=spec.concurrency),
        )

    def describe(self) -> dict[str, Any]:
        s = self.spec
        return {
            "kind": "http",
            "url": strip_url(s.url),
            "method": s.method,
            "request_template": strip_template(s.template.text),
            "headers": {**dict.fromkeys(s.headers, REDACTED), **{k: f"${v}" for k, v in s.env_headers.items()}},
            "response": s.shape.describe(),
            "retries_on_connect_error": s.retries,
            "retries_on_status": {**RETRY.describe(), "max_retries": s.retries},
        }

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _send(self, request: Request) -> httpx.Response:
        """The server's answer, asked again on a retryable status (``RETRY``) up to ``retries`` times."""
        body = self.spec.template.render(request)
        attempt = 0
        while True:
            if self.spec.method == "GET":
                params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in dict(body).items() if v is not None}
                resp = await self.client.get(self.spec.url, params=params)
            else:
                resp = await self.client.request(self.spec.method, self.spec.url, json=body)
            wait = RETRY.wait(resp.status_code, resp.headers.get("Retry-After"), attempt)
            if wait is None or attempt >= self.spec.retries:
                return resp
            await asyncio.sleep(wait)
            attempt += 1

    async def fetch(self, request: Request) -> Any:
        """The parsed JSON answer; HTTP errors and non-JSON bodies are :class:`RetrieverError` (secrets redacted)."""
        resp = await self._send(request)
        if resp.status_code >= 400:
            raise RetrieverError(self.secrets.redact(f"HTTP {resp.status_code}: {resp.text[:300]}"))
        try:
            return resp.json()
        except ValueError:
            raise RetrieverError(self.secrets.redact(f"response is not JSON: {resp.text[:300]}")) from None

    async def retrieve(self, request: Request) -> Response:
        try:
            raw = await self.fetch(request)
        except httpx.TimeoutException:
            raise TimeoutError from None  # the runner records it as a timeout, like its own deadline
        except httpx.HTTPError as exc:
            raise RetrieverError(self.secrets.redact(f"{type(exc).__name__}: {exc}")) from None
        return self.spec.shape.read(raw)

    async def first(self, request: Request) -> Response:
        """The pre-flight request: an unreachable URL, an HTTP error or an unmatched path stops everything; a
        timeout is the runner's to record (``runner.preflight``)."""
        url = visible(strip_url(self.spec.url))
        r = self.secrets.redact
        try:
            raw = await self.fetch(request)
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.TransportError as exc:
            raise RecordError(f"cannot reach {url}: {visible(r(str(exc)))}; is the server running?") from None
        except httpx.HTTPError as exc:
            raise RecordError(
                f"{url}: the first request failed: {type(exc).__name__}: {visible(r(str(exc)))}"
            ) from None
        except RetrieverError as exc:
            raise RecordError(f"{url}: the first request failed: {visible(exc, keep_newlines=True)}") from None
        if not isinstance(raw, dict | list):
            raise RecordError(f"{url}: the first response is not a JSON object or list:\n{r(show(raw))}")
        try:
            return self.spec.shape.check_first(raw)
        except RecordError as exc:
            raise RecordError(r(str(exc))) from None
