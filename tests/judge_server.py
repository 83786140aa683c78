"""A real chat-completions server on 127.0.0.1 for the judge's tests: answers scripted per (query, passage) pair,
optional latency, 429s (with Retry-After) or 500s before the answer, malformed answers, and any response at all
(``respond``: a hostile server's echo of the Authorization header, a body trickled a byte at a time, a huge body).

It reads the pair back out of the JSON object the judge's prompt sends (the one ``{data}`` line), so a script
sees exactly what the model would. Every request body is kept for the tests to inspect.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

#: A script: (query, passage) -> the answer text (``None``: answer ``grade: 0``).
Script = Callable[[str, str], str | None]
#: A whole response for a request (its headers, the pair): None leaves it to the script.
Respond = Callable[[dict[str, str], tuple[str, str]], Response | None]


def pair_of(body: dict[str, Any]) -> tuple[str, str]:
    """The (query, passage) of a request: the JSON object line of the user message."""
    user = body["messages"][-1]["content"]
    for line in user.splitlines():
        if line.startswith("{") and line.endswith("}"):
            data = json.loads(line)
            return str(data["query"]), str(data["passage"])
    raise AssertionError(f"no JSON data line in the user message: {user!r}")


@dataclass
class ChatServer:
    http: HTTPServer
    script: Script
    latency_s: float = 0.0
    busy_first: int = 0  # 429 answers before each pair's real answer
    retry_after: str | None = "0"
    fail_first: int = 0  # 500 answers before each pair's real answer
    respond: Respond | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _tries: dict[tuple[str, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return self.http.url_for("/v1")

    def handle(self, request: Request) -> Response:
        body = json.loads(request.data)
        pair = pair_of(body)
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            n = self._tries[pair] = self._tries.get(pair, 0) + 1
        if self.latency_s:
            time.sleep(self.latency_s)
        if n <= self.busy_first:
            headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            return Response('{"error": "rate limited"}', status=429, headers=headers, content_type="application/json")
        if n <= self.busy_first + self.fail_first:
            return Response('{"error": "overloaded"}', status=500, content_type="application/json")
        if self.respond is not None:
            custom = self.respond(dict(request.headers), pair)
            if custom is not None:
                return custom
        return Response(json.dumps(completion(self.script(*pair), body["model"])), content_type="application/json")

    def asked(self) -> list[tuple[str, str]]:
        return [pair_of(b) for b in self.requests]


def completion(text: str | None, model: str = "m") -> dict[str, Any]:
    """A chat-completions answer holding ``text`` (``None``: ``grade: 0``)."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text or "grade: 0"}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103},
    }


@contextmanager
def chat_server(script: Script, **kw: Any) -> Iterator[ChatServer]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access line per request buries a failure
    http = HTTPServer(host="127.0.0.1", threaded=True)
    http.start()
    server = ChatServer(http, script, **kw)
    http.expect_request("/v1/chat/completions", method="POST").respond_with_handler(server.handle)
    try:
        yield server
    finally:
        http.clear()
        if http.is_running():
            http.stop()
