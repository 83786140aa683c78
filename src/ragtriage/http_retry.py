"""When an HTTP client asks a server again, and after how long: one rule for every client of ragtriage that talks
to a server (the judge's chat endpoint, the recorder's retriever).

A retryable answer (the policy's statuses; ``None`` stands for a timeout or a lost connection) is asked again after
the wait the server's ``Retry-After`` names, as delta-seconds or an HTTP date (RFC 9110 §10.2.3), else after an
exponential backoff with jitter, ``backoff_s`` doubled per retry and capped at ``max_wait_s``. A ``Retry-After``
longer than ``max_wait_s`` ends the retries: asking sooner than the server said only gets refused again and
spends the budget, and waiting longer than the bound is what the bound forbids. A header that is neither form is
ignored (the backoff applies), never read as a number it does not hold.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from dataclasses import dataclass
from datetime import UTC
from typing import Any

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
