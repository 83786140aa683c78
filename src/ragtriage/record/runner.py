"""Asking every case at a stated concurrency and turning each answer into the contract's result rows and event.

``concurrency`` workers share one queue of cases. Each request has a deadline (``timeout_s``); an optional rate
limit spaces request starts; warm-up requests (the pre-flight one first) are not timed; with ``repeat`` > 1 each
case is asked that many times and its event carries the median latency, the list of latencies and the run's
percentiles go to run.json. Results always come from a case's first answer, so a repeated recording ranks the
same as a single one. ``stop`` (set by Ctrl-C) or cancelling the task ends the recording at once: requests in flight
are abandoned (their cases are asked again on resume), the cases finished so far are journaled, and the run is
written as partial.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragtriage.record.types import Case, Request, Response, Retriever, RetrieverError

PROGRESS_EVERY_S = 0.2
STOP_POLL_S = 0.05


@dataclass(frozen=True)
class RecordOptions:
    k: int
    candidate_k: int | None = None
    concurrency: int = 8
    timeout_s: float = 10.0
    rate_per_s: float | None = None
    warmup: int = 1
    repeat: int = 1


@dataclass(frozen=True)
class Progress:
    done: int  # earlier (resumed) cases included
    total: int
    errors: int
    timeouts: int
    elapsed_s: float
    p95_ms: float | None
    done_now: int  # cases recorded by this invocation, for the rate

    @property
    def cases_per_s(self) -> float:
        return self.done_now / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass
class Outcome:
    """What a recording did; ``latencies_ms`` holds every timed request, earlier (resumed) ones included."""

    recorded: int
    total: int
    interrupted: bool
    errors: int = 0
    timeouts: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    versions: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Attempt:
    latency_ms: float
    response: Response | None = None
    error: str | None = None
    timed_out: bool = False


def request_for(case: Case, options: RecordOptions) -> Request:
    return Request(case.case_id, case.query, options.k, options.candidate_k, case.principal, case.filters)


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    """p50/p95/p99/max by linear interpolation, the rule DuckDB's quantile_cont and the gate use."""
    if not values:
        return {"requests": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    arr = np.asarray(values, dtype=float)
    p50, p95, p99 = (round(float(v), 3) for v in np.percentile(arr, [50, 95, 99]))
    return {"requests": len(values), "p50_ms": p50, "p95_ms": p95, "p99_ms": p99, "max_ms": round(float(arr.max()), 3)}


def _rows(case_id: str, response: Response, options: RecordOptions) -> list[dict[str, Any]]:
    cand = response.candidates or []
    lists = (("candidate", cand[: options.candidate_k] if options.candidate_k else cand), ("final", response.final))
    rows: list[dict[str, Any]] = []
    for stage, hits in lists:
        for rank, h in enumerate(hits[: options.k] if stage == "final" else hits, 1):
            row: dict[str, Any] = {
                "case_id": case_id,
                "stage": stage,
                "rank": rank,
                "document_id": h.document_id,
                "chunk_id": h.chunk_id,
                "score": h.score,
            }
            if h.snippet is not None:
                row["snippet"] = h.snippet
            if h.metadata is not None:
                row["metadata"] = h.metadata
            rows.append(row)
    return rows


def entry_for(case: Case, attempts: list[Attempt], options: RecordOptions) -> dict[str, Any]:
    """The journal line of one case: its result rows (from the first answer) and its serving event."""
    first = attempts[0]
    resp = first.response
    latencies = [a.latency_ms for a in attempts]
    event: dict[str, Any] = {
        "case_id": case.case_id,
        "latency_ms": round(statistics.median(latencies), 3),
        "timed_out": any(a.timed_out for a in attempts),
        "empty": resp is None or not resp.final,
        "fallback": bool(resp and resp.fallback),
        "status": "error" if resp is None else (resp.status or "ok"),
        "error": first.error,
        "concurrency": options.concurrency,
    }
    if len(attempts) > 1:
        event["latency_ms_runs"] = [round(v, 3) for v in latencies]
    return {
        "case_id": case.case_id,
        "position": case.position,
        "results": [] if resp is None else _rows(case.case_id, resp, options),
        "event": event,
        "latencies_ms": latencies,
        "versions": {} if resp is None else resp.versions,
    }


class RateLimit:
    """Request starts at least ``1 / per_s`` seconds apart, across all workers."""

    def __init__(self, per_s: float) -> None:
        self.interval = 1.0 / per_s
        self.next = 0.0

    async def wait(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        slot = max(now, self.next)
        self.next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


async def ask(retriever: Retriever, request: Request, timeout_s: float) -> Attempt:
    """One timed request; its failure is data (an error or timeout attempt), never an exception."""
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(timeout_s):
            response = await retriever.retrieve(request)
    except TimeoutError:
        ms = (time.perf_counter() - t0) * 1000
        return Attempt(ms, error=f"timed out after {timeout_s:g} s", timed_out=True)
    except RetrieverError as exc:
        return Attempt((time.perf_counter() - t0) * 1000, error=str(exc))
    except Exception as exc:  # an adapter's unforeseen failure is still one case's error, not the run's end
        return Attempt((time.perf_counter() - t0) * 1000, error=f"{type(exc).__name__}: {exc}")
    return Attempt((time.perf_counter() - t0) * 1000, response)


PREFLIGHT_TRIES = 3
"""Cases the pre-flight may try when the first ones time out: a slow case is the case's timeout, not the run's end."""


async def preflight(retriever: Retriever, request: Request, timeout_s: float) -> Response | None:
    """The first, untimed request: a configuration error (unreachable server, HTTP error, a response that does
    not match the paths) stops the recording before a case is written. A timeout is not one: None, and the case
    is asked again by the workers and recorded as whatever it gets (a timeout when it times out again)."""
    try:
        async with asyncio.timeout(timeout_s):
            return await retriever.first(request)
    except TimeoutError:
        return None


class Recorder:
    def __init__(
        self,
        retriever: Retriever,
        options: RecordOptions,
        on_entry: Callable[[dict[str, Any]], None],
        on_progress: Callable[[Progress], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.retriever, self.options, self.on_entry = retriever, options, on_entry
        self.on_progress = on_progress
        self.stop = stop or threading.Event()
        self.limit = RateLimit(options.rate_per_s) if options.rate_per_s else None

    async def run(self, cases: list[Case], done: dict[str, dict[str, Any]]) -> Outcome:
        """Record every case not in ``done``; ``done`` entries count towards the totals and percentiles."""
        o = self.options
        pending = [c for c in cases if c.case_id not in done]
        out = Outcome(len(done), len(cases), False)
        for e in done.values():
            self._count(out, e)
        try:
            for probe in (pending or cases)[:PREFLIGHT_TRIES]:
                if await preflight(self.retriever, request_for(probe, o), o.timeout_s) is not None:
                    break
            for c in (pending or cases)[1 : o.warmup]:
                await ask(self.retriever, request_for(c, o), o.timeout_s)
            await self._workers(iter(pending), out)
        finally:
            await self.retriever.aclose()
        out.interrupted = out.recorded < out.total
        return out

    async def _workers(self, queue: Iterator[Case], out: Outcome) -> None:
        started, before = time.perf_counter(), out.recorded
        last = [0.0]

        async def worker() -> None:
            while not self.stop.is_set() and (case := next(queue, None)) is not None:
                attempts = []
                for _ in range(self.options.repeat):
                    if self.limit:
                        await self.limit.wait()
                    attempts.append(await ask(self.retriever, request_for(case, self.options), self.options.timeout_s))
                entry = entry_for(case, attempts, self.options)
                self.on_entry(entry)
                out.recorded += 1
                self._count(out, entry)
                self._progress(out, started, before, last)

        tasks = [asyncio.create_task(worker()) for _ in range(self.options.concurrency)]

        async def watch() -> None:
            while not self.stop.is_set():
                await asyncio.sleep(STOP_POLL_S)
            for t in tasks:
                t.cancel()

        watcher = asyncio.create_task(watch())
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            results = []
        finally:
            watcher.cancel()
        self._progress(out, started, before, last, force=True)
        bugs = [r for r in results if isinstance(r, Exception)]
        if bugs:
            raise bugs[0]

    @staticmethod
    def _count(out: Outcome, entry: dict[str, Any]) -> None:
        ev = entry["event"]
        out.errors += ev["status"] == "error"
        out.timeouts += bool(ev["timed_out"])
        out.latencies_ms += entry["latencies_ms"]
        for k, v in entry["versions"].items():
            if v not in out.versions.setdefault(k, []):
                out.versions[k].append(v)

    def _progress(self, out: Outcome, started: float, before: int, last: list[float], force: bool = False) -> None:
        now = time.perf_counter()
        if self.on_progress is None or (not force and now - last[0] < PROGRESS_EVERY_S):
            return
        last[0] = now
        p95 = percentiles(out.latencies_ms)["p95_ms"]
        self.on_progress(
            Progress(
                out.recorded,
                out.total,
                out.errors,
                out.timeouts,
                now - started,
                None if p95 is None else float(p95),
                out.recorded - before,
            )
        )
