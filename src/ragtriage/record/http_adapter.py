"""The HTTP retriever: one JSON request per case through ``httpx.AsyncClient``, hits read by response paths.

Connection failures are retried by httpx's own transport (``retries``: connect errors only, never a request the
server may have acted on). Header values (``--header``, ``--header-env``, ``--token-env``) are sent but never
described: run.json records header names and the environment variable names, not their values; the URL loses
its password and any secret-looking query parameter, and the template the string values of secret-looking keys.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from ragtriage.record.hits import ResponseShape, show
from ragtriage.record.template import Template
from ragtriage.record.types import RecordError, Request, Response, RetrieverError
from ragtriage.safe_text import visible

SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "auth", "sig", "credential")
REDACTED = "<redacted>"


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


class HttpRetriever:
    def __init__(self, spec: HttpSpec) -> None:
        if urlsplit(spec.url).scheme not in ("http", "https"):
            raise RecordError(f"--retriever {spec.url!r}: an HTTP retriever needs an http:// or https:// URL")
        if spec.method == "GET" and not isinstance(spec.template.parsed, dict):
            raise RecordError("--method GET sends the template's keys as query parameters: it must be a JSON object")
        self.spec = spec
        transport = httpx.AsyncHTTPTransport(retries=spec.retries)
        self.client = httpx.AsyncClient(
            transport=transport,
            headers=header_values(spec),
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
        }

    async def aclose(self) -> None:
        await self.client.aclose()

    async def fetch(self, request: Request) -> Any:
        """The parsed JSON answer; HTTP errors and non-JSON bodies are :class:`RetrieverError`."""
        body = self.spec.template.render(request)
        if self.spec.method == "GET":
            params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in dict(body).items() if v is not None}
            resp = await self.client.get(self.spec.url, params=params)
        else:
            resp = await self.client.request(self.spec.method, self.spec.url, json=body)
        if resp.status_code >= 400:
            raise RetrieverError(f"HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return resp.json()
        except ValueError:
            raise RetrieverError(f"response is not JSON: {resp.text[:300]}") from None

    async def retrieve(self, request: Request) -> Response:
        try:
            raw = await self.fetch(request)
        except httpx.TimeoutException:
            raise TimeoutError from None  # the runner records it as a timeout, like its own deadline
        except httpx.HTTPError as exc:
            raise RetrieverError(f"{type(exc).__name__}: {exc}") from None
        return self.spec.shape.read(raw)

    async def first(self, request: Request) -> Response:
        """The pre-flight request: an unreachable URL, an HTTP error or an unmatched path stops everything."""
        url = visible(strip_url(self.spec.url))
        try:
            raw = await self.fetch(request)
        except httpx.TimeoutException:
            raise RecordError(f"{url} did not answer within {self.spec.timeout_s:g} s (the first request)") from None
        except httpx.TransportError as exc:
            raise RecordError(f"cannot reach {url}: {visible(exc)}; is the server running?") from None
        except httpx.HTTPError as exc:
            raise RecordError(f"{url}: the first request failed: {type(exc).__name__}: {visible(exc)}") from None
        except RetrieverError as exc:
            raise RecordError(f"{url}: the first request failed: {visible(exc, keep_newlines=True)}") from None
        if not isinstance(raw, dict | list):
            raise RecordError(f"{url}: the first response is not a JSON object or list:\n{show(raw)}")
        return self.spec.shape.check_first(raw)
