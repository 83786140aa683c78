"""How an HTTP client of ragtriage asks a server, and when it asks again: one path for every client that talks to
a server (the judge's chat endpoint, the recorder's retriever).

An attempt (:func:`attempt`) has one deadline for the whole of it (connecting, sending, and reading the answer to
its last byte): a server trickling a byte at a time cannot hold it past the deadline. Its body is read up to a cap;
a longer answer is :class:`TooLarge`, never read whole nor kept.

A retryable answer (the policy's statuses; ``None`` stands for a timeout or a lost connection) is asked again after
the wait the server's ``Retry-After`` names, as delta-seconds or an HTTP date (RFC 9110 §10.2.3), else after an
exponential backoff with jitter, ``backoff_s`` doubled per retry and capped at ``max_wait_s``. A ``Retry-After``
longer than ``max_wait_s`` ends the retries: asking sooner than the server said only gets refused again and
spends the budget, and waiting longer than the bound is what the bound forbids. A header that is neither form is
ignored (the backoff applies), never read as a number it does not hold.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import httpx

_DELAY_SECONDS = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() also takes '²' and '٣'


@dataclass(frozen=True)
class RetryPolicy:
    """Which answers are asked again and how long a client may wait before asking."""

    statuses: frozenset[int]
    backoff_s: float
    max_wait_s: float

    def describe(self) -> dict[str, Any]:
        """The policy as a run's or a session's record states it."""
        return {
            "statuses": sorted(self.statuses),
            "backoff_s": self.backoff_s,
            "max_wait_s": self.max_wait_s,
            "honours_retry_after": True,
            "retry_after_beyond_max_wait": "stops retrying",
        }

    def backoff(self, attempt: int) -> float:
        """The wait before retry ``attempt`` (0 for the first) when the server names none: ``backoff_s`` doubled per
        retry, times a jitter in [0.5, 1.5) so concurrent clients do not ask again in step, capped at
        ``max_wait_s``."""
        return min(self.backoff_s * 2.0**attempt * (0.5 + random.random()), self.max_wait_s)

    def wait(self, status: int | None, retry_after_header: str | None, attempt: int) -> float | None:
        """Seconds to wait before asking again after an answer of ``status`` (None: no answer, a timeout or a lost
        connection), or None when it must not be asked again: the status is not retryable, or the server asks for
        a wait longer than ``max_wait_s``."""
        if status is not None and status not in self.statuses:
            return None
        told = retry_after(retry_after_header)
        if told is None:
            return self.backoff(attempt)
        return told if told <= self.max_wait_s else None

    async def ask(
        self,
        retries: int,
        attempt: Callable[[], Awaitable[Answer]],
        failures: tuple[type[Exception], ...] = (),
    ) -> Answer | Exception:
        """``attempt()`` asked again while its answer is retryable, at most ``retries`` more times, after the wait
        :meth:`wait` names: the first answer below 400, else the last answer. An exception of ``failures`` (a
        timeout, a lost connection) is no answer, asked again too, and returned when it is the last; any other
        exception propagates."""
        tried = 0
        while True:
            status: int | None = None
            header: str | None = None
            last: Answer | Exception
            try:
                last = answer = await attempt()
            except failures as exc:
                last = exc
            else:
                if answer.status < 400:
                    return answer
                status, header = answer.status, answer.headers.get("retry-after")
            wait = self.wait(status, header, tried) if tried < retries else None
            if wait is None:
                return last
            await asyncio.sleep(wait)
            tried += 1


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date (a date past gives 0); None
    when absent or in neither form."""
    if not value:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": an HTTP date is GMT whatever it says
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class TooLarge(Exception):
    """An answer longer than the cap of :func:`attempt`: not read further, never kept."""


@dataclass(frozen=True)
class Answer:
    """A server's whole answer to one attempt."""

    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


async def attempt(
    client: httpx.AsyncClient, method: str, url: str, *, deadline_s: float, cap: int, **request: Any
) -> Answer:
    """One request within ``deadline_s`` as a whole (``TimeoutError`` past it), its body read up to ``cap`` bytes
    (:class:`TooLarge` beyond, or when the declared length is beyond)."""
    async with asyncio.timeout(deadline_s), client.stream(method, url, **request) as resp:
        declared = resp.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > cap:
            raise TooLarge
        data = bytearray()
        async for chunk in resp.aiter_bytes():
            data += chunk
            if len(data) > cap:
                raise TooLarge
        return Answer(resp.status_code, resp.headers, bytes(data))
