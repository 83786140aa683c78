# ruff: noqa: F811  (the server fixture is imported from test_record_http)
"""One retry rule for every HTTP client (``ragtriage.http_retry``): the judge's chat client and the recorder's
retriever, each against a real local server answering 429 with ``Retry-After`` as seconds, as an HTTP date, beyond
the bound and in neither form, wait the same, and never longer than the bound."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from ragtriage.http_retry import RetryPolicy, retry_after
from ragtriage.judge.client import Budget, ChatClient, Endpoint
from ragtriage.record.build import HttpOptions, make_retriever, response_shape
from ragtriage.record.types import Request as CaseRequest
from ragtriage.record.types import RetrieverError
from tests.unit.test_record_http import server  # noqa: F401  (fixture)

CHAT = {"choices": [{"message": {"content": "grade: 2"}}]}
HITS = {"hits": [{"doc": "d1", "s": 1.0}]}


def _busy_once(server: HTTPServer, retry_after_value: Callable[[], str], ok: dict[str, Any]) -> list[float]:
    """The first request gets 429 with the header ``retry_after_value()`` makes then; later ones ``ok``. Returns
    the arrival times."""
    seen: list[float] = []

    def handle(request: Request) -> Response:
        seen.append(time.monotonic())
        if len(seen) == 1:
            return Response("slow down", status=429, headers={"Retry-After": retry_after_value()})
        return Response(json.dumps(ok), content_type="application/json")

    server.expect_request("/v1/chat/completions").respond_with_handler(handle)
    server.expect_request("/search").respond_with_handler(handle)
    return seen


async def _judge(server: HTTPServer) -> bool:
    """Whether the judge's client got an answer (its bound lowered to 5 s to keep the test short)."""
    client = ChatClient(Endpoint(server.url_for("/v1"), "m", backoff_s=0.2, max_wait_s=5.0), Budget(None))
    try:
        reply = await client.ask([{"role": "user", "content": "x"}])
    finally:
        await client.aclose()
    return reply.text is not None


async def _recorder(server: HTTPServer) -> bool:
    """Whether the recorder's retriever got an answer (its own policy: ``record.http_adapter.RETRY``)."""
    shape = response_shape("document", {"hits": "hits", "document_id": "doc", "score": "s"})
    retriever = make_retriever(server.url_for("/search"), shape, HttpOptions(request='{"q": "{query}"}'))
    try:
        await retriever.retrieve(CaseRequest("q1", "a query", 10, None, None, None))
    except RetrieverError:
        return False
    finally:
        await retriever.aclose()
    return True


CLIENTS = {"judge": (_judge, 5.0, CHAT), "recorder": (_recorder, 30.0, HITS)}


def _run(client: str, server: HTTPServer, header: Callable[[], str]) -> tuple[bool, list[float], float]:
    ask, max_wait, ok = CLIENTS[client]
    seen = _busy_once(server, header, ok)
    t0 = time.monotonic()
    answered = asyncio.run(asyncio.wait_for(ask(server), timeout=max_wait + 10))
    return answered, seen, time.monotonic() - t0


@pytest.mark.slow  # real Retry-After waits of 1-2 s per client
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_retry_after_seconds_and_http_date_are_waited_for(server: HTTPServer, client: str) -> None:
    answered, seen, _ = _run(client, server, lambda: "1")
    assert answered and len(seen) == 2
    assert 1.0 <= seen[1] - seen[0] < 2.0  # the asked second, not the backoff, not more

    server.clear()
    # an HTTP date two seconds ahead, made when the 429 is sent (whole seconds: the wait is 1-2 s)
    answered, seen, _ = _run(client, server, lambda: email.utils.formatdate(time.time() + 2, usegmt=True))
    assert answered and len(seen) == 2
    assert 0.9 <= seen[1] - seen[0] < 3.0


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_retry_after_beyond_the_bound_ends_the_retries_at_once(server: HTTPServer, client: str) -> None:
    """Both clients give up on "come back in an hour" without waiting: the judge used to wait its whole bound
    and ask again, only to be refused again."""
    answered, seen, took = _run(client, server, lambda: "3600")
    assert not answered and len(seen) == 1
    assert took < 2.0


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("header", ["soon", "²", "-1", "1.5", "nan"])
def test_a_retry_after_in_neither_form_is_ignored_for_the_backoff(server: HTTPServer, client: str, header: str) -> None:
    """Not delta-seconds (ASCII digits) nor an HTTP date: the backoff applies. The judge used to raise on '²'
    (``str.isdigit``); the recorder used to read '-1' as no wait and 'nan' as beyond the bound."""
    answered, seen, _ = _run(client, server, lambda: header)
    assert answered and len(seen) == 2
    assert 0.09 <= seen[1] - seen[0] < 2.0  # the first backoff (0.2 s or 0.5 s, jitter 0.5-1.5x)


def test_retry_after_reads_both_forms_and_nothing_else() -> None:
    now = 1445412470.0
    assert retry_after("7") == 7.0 and retry_after(" 120 ") == 120.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == pytest.approx(10.0)
    assert retry_after("Wed, 21 Oct 2015 07:28:00 -0000", now=now) == pytest.approx(10.0)  # GMT whatever it says
    assert retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now=now) == 0.0  # a date past: no wait
    for bad in (None, "", "soon", "²", "٣", "-1", "1.5", "1e3", "nan", "inf"):
        assert retry_after(bad) is None, bad


def test_the_wait_is_bounded_and_only_retryable_answers_are_asked_again() -> None:
    policy = RetryPolicy(frozenset({429, 503}), backoff_s=1.0, max_wait_s=4.0)
    assert policy.wait(404, None, 0) is None  # the request itself is wrong
    assert policy.wait(429, "4", 0) == 4.0 and policy.wait(429, "5", 0) is None
    for attempt in range(8):  # the backoff doubles with jitter in [0.5, 1.5) and never passes the bound
        for status in (None, 503):
            wait = policy.wait(status, None, attempt)
            assert wait is not None and min(0.5 * 2**attempt, 4.0) <= wait <= 4.0
