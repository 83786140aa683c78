"""The HTTP retriever: one JSON request per case through ``httpx.AsyncClient``, hits read by response paths.

Connection failures are retried by httpx's own transport (``retries``: connect errors only, never a request the
server may have acted on). A 429, 502, 503 or 504 is retried as many times (``RETRY``, stated in run.json); any
other HTTP error is the case's answer. Each attempt has the deadline ``timeout_s`` and reads at most
:data:`BODY_CAP` bytes (``ragtriage.http_retry``, the judge's path too). Header values (``--header``,
``--header-env``, ``--token-env``) are sent but never described: run.json records header names and the environment
variable names, not their values, and the URL and template are stripped (``ragtriage.http_secrets``). Every
message the adapter makes (an error body echoing the Authorization header, an exception naming the URL) has every
secret it knows of replaced before anyone writes it (``http_secrets.Secrets``, the judge's too).

The request template is JSON with ``{query}``, ``{k}``, ``{principal}``, ``{filters}``, ``{case_id}`` holes. Values
are never pasted into the JSON text. A placeholder outside a string (``"k": {k}``) becomes a marker
string before the template is parsed; a string that is exactly one placeholder (``"q": "{query}"``) takes the
value itself, whatever its JSON type; a placeholder inside a longer string (``"id": "case-{case_id}"``) is
replaced by the value's text. A query holding quotes, braces or ``"}, "admin": true`` therefore stays one
string value, and the template is checked as JSON once, before any request.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from ragtriage.http_retry import RetryPolicy, TooLarge, attempt
from ragtriage.http_secrets import REDACTED, Secrets, strip_template, strip_url
from ragtriage.record.hits import ResponseShape, show
from ragtriage.record.types import HttpOptions, RecordError, Request, Response, RetrieverError, pairs
from ragtriage.safe_text import visible

RETRY = RetryPolicy(statuses=frozenset({429, 502, 503, 504}), backoff_s=0.5, max_wait_s=30.0)
"""HTTP answers worth asking again (rate limited, a gateway or the service briefly down), the first backoff
(doubled per retry) and the longest wait: a Retry-After beyond it ends the retries (``ragtriage.http_retry``)."""
BODY_CAP = 64 << 20
"""The most bytes of one answer read: far above any hit list a recording asks for (k hits, snippets of a few
hundred characters), so only a server sending something else reaches it."""


NAMES = ("query", "k", "candidate_k", "principal", "filters", "case_id")
_HOLE = re.compile(r"\{(" + "|".join(NAMES) + r")\}")
_MARK = "\u0000ragtriage:{}\u0000"
_BRACES = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Template:
    text: str
    parsed: Any

    def render(self, request: Request) -> Any:
        values = {
            "query": request.query,
            "k": request.k,
            "candidate_k": request.candidate_k,
            "principal": request.principal,
            "filters": request.filters,
            "case_id": request.case_id,
        }
        return _fill(self.parsed, values)


DEFAULT_TEMPLATE = (
    '{"query": "{query}", "k": {k}, "candidate_k": {candidate_k}, "principal": {principal}, '
    '"filters": {filters}, "case_id": "{case_id}"}'
)


def parse_template(text: str) -> Template:
    """Check the template once: valid JSON with its placeholders, and no unknown ``{name}`` placeholder."""
    unknown = sorted({m.group(1) for m in _BRACES.finditer(text)} - set(NAMES))
    if unknown:
        raise RecordError(
            f"--request has unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            f"use {', '.join('{' + n + '}' for n in NAMES)}"
        )
    marked = _mark_bare(text)
    try:
        parsed = json.loads(marked)
    except json.JSONDecodeError as exc:
        raise RecordError(
            f"--request is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); placeholders "
            f'outside quotes are allowed only where a JSON value goes, e.g. {{"k": {{k}}}}'
        ) from None
    return Template(text, parsed)


def _mark_bare(text: str) -> str:
    """Replace placeholders that stand outside JSON strings with marker strings, leaving strings untouched."""
    out: list[str] = []
    i, in_str = 0, False
    while i < len(text):
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif ch == "{" and (m := _HOLE.match(text, i)):
            out.append(json.dumps(_MARK.format(m.group(1))))
            i = m.end()
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _fill(node: Any, values: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        return {_text(_fill(k, values)): _fill(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, values) for v in node]
    if not isinstance(node, str):
        return node
    for name in NAMES:
        if node in (_MARK.format(name), "{" + name + "}"):
            return values[name]
    if "{" not in node:
        return node
    return _HOLE.sub(lambda m: _text(values[m.group(1)]), node)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class HttpRetriever:
    def __init__(self, url: str, shape: ResponseShape, options: HttpOptions) -> None:
        self.url, self.shape, self.options = url, shape, options
        self.env_headers = pairs(list(options.header_env), "--header-env", "=")
        if options.token_env:
            self.env_headers["Authorization"] = options.token_env
        self.method = options.method.upper()
        if self.method not in ("GET", "POST", "PUT"):
            raise RecordError(f"--method {options.method!r}: use POST, GET or PUT")
        self.template = parse_template(options.request or DEFAULT_TEMPLATE)
        self.headers = pairs(list(options.headers), "--header", ":")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise RecordError(f"--retriever {url!r}: an HTTP retriever needs an http:// or https:// URL")
        if self.method == "GET" and not isinstance(self.template.parsed, dict):
            raise RecordError("--method GET sends the template's keys as query parameters: it must be a JSON object")
        if (parts.username or parts.password) and any(
            h.lower() == "authorization" for h in [*self.headers, *self.env_headers]
        ):
            raise RecordError(
                "the --retriever URL holds credentials (user:password@) and an Authorization header is given too: "
                "the URL's would replace the header; remove one of them"
            )
        headers = self._header_values()
        self.secrets = Secrets(headers, url, self.template.text)
        self.client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(retries=options.retries),
            headers=headers,
            timeout=httpx.Timeout(options.timeout_s),
            limits=httpx.Limits(max_connections=options.concurrency, max_keepalive_connections=options.concurrency),
        )

    def _header_values(self) -> dict[str, str]:
        """Every header to send; an environment variable that is not set is a :class:`RecordError`."""
        out = dict(self.headers)
        for name, var in self.env_headers.items():
            value = os.environ.get(var)
            if not value:
                raise RecordError(f"environment variable {var} (for header {name}) is not set or empty")
            out[name] = f"Bearer {value}" if name.lower() == "authorization" and " " not in value else value
        return out

    def describe(self) -> dict[str, Any]:
        retries = self.options.retries
        return {
            "kind": "http",
            "url": strip_url(self.url),
            "method": self.method,
            "request_template": strip_template(self.template.text),
            "headers": {**dict.fromkeys(self.headers, REDACTED), **{k: f"${v}" for k, v in self.env_headers.items()}},
            "response": self.shape.describe(),
            "retries_on_connect_error": retries,
            "retries_on_status": {**RETRY.describe(), "max_retries": retries},
        }

    async def aclose(self) -> None:
        await self.client.aclose()

    async def fetch(self, request: Request) -> Any:
        """The parsed JSON answer, asked again on a retryable status (``RETRY``) up to ``retries`` times; HTTP
        errors, an oversized answer and non-JSON bodies are :class:`RetrieverError` (secrets redacted)."""
        body = self.template.render(request)
        if self.method == "GET":
            params = {k: v if isinstance(v, str) else json.dumps(v) for k, v in dict(body).items() if v is not None}
            sent: dict[str, Any] = {"params": params}
        else:
            sent = {"json": body}
        o = self.options
        try:
            resp = await RETRY.ask(
                o.retries,
                lambda: attempt(self.client, self.method, self.url, deadline_s=o.timeout_s, cap=BODY_CAP, **sent),
            )
        except TooLarge:
            raise RetrieverError(f"the answer is larger than {BODY_CAP} bytes: not read, not kept") from None
        assert not isinstance(resp, Exception)  # no failure is retried here: they propagate
        if resp.status >= 400:
            raise RetrieverError(self.secrets.redact(f"HTTP {resp.status}: {resp.text[:300]}"))
        try:
            return json.loads(resp.body)
        except (ValueError, RecursionError):
            raise RetrieverError(self.secrets.redact(f"response is not JSON: {resp.text[:300]}")) from None

    async def retrieve(self, request: Request) -> Response:
        try:
            raw = await self.fetch(request)
        except httpx.TimeoutException:
            raise TimeoutError from None  # the runner records it as a timeout, like its own deadline
        except httpx.HTTPError as exc:
            raise RetrieverError(self.secrets.redact(f"{type(exc).__name__}: {exc}")) from None
        return self.shape.read(raw)

    async def first(self, request: Request) -> Response:
        """The pre-flight request: an unreachable URL, an HTTP error or an unmatched path stops everything; a
        timeout is the runner's to record (``runner.preflight``)."""
        url = visible(strip_url(self.url))
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
            return self.shape.check_first(raw)
        except RecordError as exc:
            raise RecordError(r(str(exc))) from None
