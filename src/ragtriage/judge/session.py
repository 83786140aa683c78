"""A judging session: plan the pairs (which are cached, what asking the rest costs), ask the rest at a stated
concurrency, and keep the answers as they arrive (in small batches).

Ctrl-C (or a spent budget) stops the session where it is: the answers received are stored, the session is marked
``interrupted``, and ``--resume`` asks the same pairs again, the answered ones from the cache (nothing twice).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from ragtriage.judge.answers import (
    FLUSH_AFTER_S,
    FLUSH_EVERY,
    JudgeIdentity,
    answer_key,
    cached_keys,
    ensure_tables,
    store_answers,
)
from ragtriage.judge.client import BUDGET_SPENT, Budget, ChatClient, Endpoint, Reply
from ragtriage.judge.pairs import gradable
from ragtriage.judge.prompt import Prompt, Scale, parse_answer

CHARS_PER_TOKEN = 4  # the usual rough rate for English text; the estimate says it is one


@dataclass(frozen=True)
class Plan:
    """The pairs of a session and what asking them costs, known before anything is sent."""

    pairs: pa.Table  # gradable pairs with their ``key``
    no_text: int
    cached: int
    to_ask: int
    prompt_tokens: int  # estimated, of the pairs to ask
    completion_tokens: int  # at most: max_tokens per pair
    retries: int

    @property
    def max_requests(self) -> int:
        return self.to_ask * (1 + self.retries)

    def cost(self, price_in: float | None, price_out: float | None) -> float | None:
        """Estimated cost at prices per million tokens (None without prices)."""
        if price_in is None and price_out is None:
            return None
        return (self.prompt_tokens * (price_in or 0.0) + self.completion_tokens * (price_out or 0.0)) / 1e6


def identity(endpoint: Endpoint, prompt: Prompt, scale: Scale) -> JudgeIdentity:
    return JudgeIdentity(
        endpoint.model,
        prompt.sha256,
        f"{scale.grade_min}..{scale.grade_max}|{scale.rubric}",
        endpoint.temperature,
        endpoint.seed,
    )


def _unasked(con: duckdb.DuckDBPyConnection, pairs: pa.Table) -> dict[str, tuple[str, str]]:
    """The (query, text) of every key of ``pairs`` not answered yet, each key once."""
    if not pairs.num_rows:
        return {}
    done = cached_keys(con, pairs.column("key").combine_chunks())
    todo: dict[str, tuple[str, str]] = {}
    for q, t, k in zip(*(pairs.column(c).to_pylist() for c in ("query", "text", "key")), strict=True):
        if k not in done:
            todo.setdefault(k, (q, t))
    return todo


def plan(con: duckdb.DuckDBPyConnection, pairs: pa.Table, endpoint: Endpoint, prompt: Prompt, scale: Scale) -> Plan:
    judge = identity(endpoint, prompt, scale)
    ok = gradable(pairs)
    keys = [
        answer_key(judge, q, t) for q, t in zip(*(ok.column(c).to_pylist() for c in ("query", "text")), strict=True)
    ]
    ok = ok.append_column("key", pa.array(keys, pa.string()))
    todo = _unasked(con, ok)
    fixed = sum(len(m["content"]) for m in prompt.messages("", "", scale))
    ask_chars = sum(fixed + len(q) + len(t) for q, t in todo.values())
    return Plan(
        ok,
        pairs.num_rows - ok.num_rows,
        sum(1 for k in keys if k not in todo),
        len(todo),
        math.ceil(ask_chars / CHARS_PER_TOKEN),
        len(todo) * endpoint.max_tokens,
        endpoint.retries,
    )


@dataclass
class Tally:
    """What the asking did so far (updated as answers arrive, so an interruption still reports them)."""

    to_ask: int
    answered: int = 0
    unparsed: int = 0
    failed: int = 0
    requests: int = 0
    interrupted: bool = False
    budget_spent: bool = False
    failures: list[str] = field(default_factory=list)  # the first few errors, for the message
    pending: list[dict[str, object]] = field(default_factory=list)  # answers not yet written
    flushed_at: float = 0.0

    def flush(self, con: duckdb.DuckDBPyConnection, *, force: bool = False) -> None:
        """Write the pending answers when there are enough of them, they have waited long enough, or ``force``."""
        now = time.monotonic()
        if self.pending and (force or len(self.pending) >= FLUSH_EVERY or now - self.flushed_at >= FLUSH_AFTER_S):
            store_answers(con, self.pending)
            self.pending = []
            self.flushed_at = now


def start_session(
    con: duckdb.DuckDBPyConnection,
    purpose: str,
    endpoint: Endpoint,
    prompt: Prompt,
    version: str,
    settings: dict[str, object],
    pairs: pa.Table,
) -> int:
    """A new session row and its pairs; returns its id."""
    ensure_tables(con)
    row = con.execute(
        """INSERT INTO judge_sessions (session_id, purpose, model, endpoint, prompt_sha256, prompt_path, temperature,
                                       seed, dataset_version, settings, status, started_at)
           VALUES (nextval('judge_session_ids'), ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', now()::TIMESTAMP)
           RETURNING session_id""",
        [
            purpose,
            endpoint.model,
            endpoint.shown(),
            prompt.sha256,
            prompt.path,
            endpoint.temperature,
            endpoint.seed,
            version,
            json.dumps(settings, sort_keys=True),
        ],
    ).fetchone()
    assert row is not None
    session = int(row[0])
    with con.cursor() as cur:
        cur.register("_judge_session_pairs", pairs)
        cur.execute(
            """INSERT INTO judge_pairs SELECT ?, case_id, unit_id, document_id, chunk_id, section_id, human_grade, key
               FROM _judge_session_pairs""",
            [session],
        )
    return session


def end_session(con: duckdb.DuckDBPyConnection, session: int, status: str, report: object = None) -> None:
    con.execute(
        "UPDATE judge_sessions SET status = ?, report = ?, finished_at = now()::TIMESTAMP WHERE session_id = ?",
        [status, None if report is None else json.dumps(report), session],
    )


def ask(
    con: duckdb.DuckDBPyConnection,
    planned: Plan,
    endpoint: Endpoint,
    prompt: Prompt,
    scale: Scale,
    *,
    budget: int | None = None,
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """Ask every planned pair that is not cached; answers are stored in small batches as they arrive and the rest
    when the asking stops. Ctrl-C ends the asking and returns the tally with ``interrupted`` set."""
    judge = identity(endpoint, prompt, scale)
    todo = _unasked(con, planned.pairs)
    tally = Tally(len(todo), flushed_at=time.monotonic())
    spent = Budget(budget)
    try:
        asyncio.run(_ask_all(con, list(todo.items()), endpoint, prompt, scale, judge, spent, tally, progress))
    except KeyboardInterrupt:
        tally.interrupted = True
    finally:
        tally.flush(con, force=True)
    tally.requests = spent.sent
    return tally


async def _ask_all(
    con: duckdb.DuckDBPyConnection,
    todo: list[tuple[str, tuple[str, str]]],
    endpoint: Endpoint,
    prompt: Prompt,
    scale: Scale,
    judge: JudgeIdentity,
    budget: Budget,
    tally: Tally,
    progress: Callable[[Tally], None] | None,
) -> None:
    client = ChatClient(endpoint, budget)
    queue: asyncio.Queue[tuple[str, tuple[str, str]]] = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            key, (query, text) = queue.get_nowait()
            reply = await client.ask(prompt.messages(query, text, scale))
            _keep(key, reply, judge, scale, tally)
            tally.flush(con)
            if progress is not None:
                progress(tally)
            if reply.error == BUDGET_SPENT:
                tally.budget_spent = True
                return

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, endpoint.concurrency))))
    finally:
        await client.aclose()


def _keep(key: str, reply: Reply, judge: JudgeIdentity, scale: Scale, tally: Tally) -> None:
    if reply.error is not None:
        if reply.error != BUDGET_SPENT:
            tally.failed += 1
            if len(tally.failures) < 3:
                tally.failures.append(reply.error)
        return
    parsed = parse_answer(reply.text, scale)
    tally.answered += 1
    tally.unparsed += parsed.grade is None
    tally.pending.append(
        {
            "key": key,
            "model": judge.model,
            "prompt_sha256": judge.prompt_sha256,
            "temperature": judge.temperature,
            "seed": judge.seed,
            "raw_answer": reply.text,
            "grade": parsed.grade,
            "problem": parsed.problem,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
        },
    )


def answers_of(con: duckdb.DuckDBPyConnection, pairs: pa.Table) -> pa.Table:
    """``pairs`` with the cached answer of each (``grade``, ``raw_answer``, ``problem``; NULL when not answered)."""
    with con.cursor() as cur:
        cur.register("_judge_answer_pairs", pairs)
        return cur.sql(
            """SELECT p.*, a.grade, a.raw_answer, a.problem, a.key IS NOT NULL AS answered
               FROM _judge_answer_pairs p LEFT JOIN judge_answers a USING (key)"""
        ).to_arrow_table()


def unparsed(answered: pa.Table) -> pa.Table:
    """The pairs of ``answers_of`` whose answer did not parse: case, unit, the raw answer (untrusted text, shown
    only through the output module) and why."""
    import pyarrow.compute as pc

    bad = answered.filter(pc.and_(answered.column("answered"), pc.is_null(answered.column("grade"))))
    return bad.select(["case_id", "unit_id", "raw_answer", "problem"])
