"""The judge's tables in the store: every answer (the cache and the provenance of every judged label), the pairs
each session asked about, and the sessions themselves.

``judge_answers`` is keyed by :func:`answer_key`, a hash of (model, prompt SHA-256, scale and rubric, temperature,
seed, query, unit text): the same question to the same judge is asked once, whichever command or session asks it.
Answers are written in small batches as they arrive (at most :data:`FLUSH_EVERY` answers or
:data:`FLUSH_AFTER_S` seconds old), and what is pending is written when the session stops, Ctrl-C included, so an
interrupted session leaves every answer it got. A request that failed
(HTTP error after retries, budget spent) is not an answer and is not kept: a rerun asks it again. An answer that
does not parse is kept with its raw text and the reason, and counted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import duckdb
import pyarrow as pa

DDL = """
CREATE TABLE IF NOT EXISTS judge_answers (
    key VARCHAR PRIMARY KEY,          -- answer_key(): model, prompt, scale, temperature, seed, query, unit text
    model VARCHAR NOT NULL,
    prompt_sha256 VARCHAR NOT NULL,
    temperature DOUBLE NOT NULL,
    seed INTEGER,
    raw_answer VARCHAR,               -- the model's text, verbatim (untrusted: shown through safe_text only)
    grade INTEGER,                    -- parsed grade; NULL when the answer does not parse
    problem VARCHAR,                  -- why it does not parse
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    answered_at TIMESTAMP NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS judge_session_ids START 1;
CREATE TABLE IF NOT EXISTS judge_sessions (
    session_id INTEGER PRIMARY KEY,
    purpose VARCHAR NOT NULL,         -- calibrate | fill
    model VARCHAR NOT NULL,
    endpoint VARCHAR NOT NULL,        -- without password or secret-looking query values
    prompt_sha256 VARCHAR NOT NULL,
    prompt_path VARCHAR NOT NULL,
    temperature DOUBLE NOT NULL,
    seed INTEGER,
    dataset_version VARCHAR NOT NULL, -- the version whose pairs were asked about
    settings JSON NOT NULL,           -- runs, depth, pairs file, sample size and seed: what --resume repeats
    status VARCHAR NOT NULL,          -- running | interrupted | done
    report JSON,                      -- the calibration report (purpose calibrate)
    new_version VARCHAR,              -- the dataset version a fill created
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP
);
CREATE TABLE IF NOT EXISTS judge_pairs (
    session_id INTEGER NOT NULL,
    case_id VARCHAR NOT NULL,
    unit_id VARCHAR NOT NULL,
    document_id VARCHAR NOT NULL,
    chunk_id VARCHAR,
    section_id VARCHAR,
    human_grade INTEGER,              -- the people's grade (calibration pairs), NULL for unjudged units
    key VARCHAR NOT NULL
);
"""

FLUSH_EVERY = 32
FLUSH_AFTER_S = 0.5

ANSWER_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("model", pa.string()),
        ("prompt_sha256", pa.string()),
        ("temperature", pa.float64()),
        ("seed", pa.int32()),
        ("raw_answer", pa.string()),
        ("grade", pa.int32()),
        ("problem", pa.string()),
        ("prompt_tokens", pa.int32()),
        ("completion_tokens", pa.int32()),
    ]
)
ANSWER_COLUMNS = ANSWER_SCHEMA.names


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(DDL)


def has_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store has the judge's tables (a read-only connection cannot create them)."""
    sql = "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'judge_answers' AND NOT temporary"
    return bool(con.execute(sql).fetchall()[0][0])


@dataclass(frozen=True)
class JudgeIdentity:
    """Everything an answer depends on besides the pair."""

    model: str
    prompt_sha256: str
    scale: str  # "grade_min..grade_max|rubric"
    temperature: float
    seed: int | None

    @property
    def annotator(self) -> str:
        return f"judge:{self.model}"


def answer_key(judge: JudgeIdentity, query: str, text: str) -> str:
    payload = json.dumps(
        [judge.model, judge.prompt_sha256, judge.scale, judge.temperature, judge.seed, query, text],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def cached_keys(con: duckdb.DuckDBPyConnection, keys: pa.Array) -> set[str]:
    """The keys of ``keys`` already answered."""
    with con.cursor() as cur:
        cur.register("_judge_keys", pa.table({"key": keys}))
        return {r[0] for r in cur.execute("SELECT key FROM judge_answers SEMI JOIN _judge_keys USING (key)").fetchall()}


def store_answers(con: duckdb.DuckDBPyConnection, rows: list[dict[str, object]]) -> None:
    """Keep a batch of answers in one transaction (one commit per answer would cap a session at a few dozen
    answers a second); a key already kept is left as it was."""
    if not rows:
        return
    table = pa.table({c: [r[c] for r in rows] for c in ANSWER_COLUMNS}, schema=ANSWER_SCHEMA)
    cols = ", ".join(ANSWER_COLUMNS)
    with con.cursor() as cur:
        cur.register("_judge_new_answers", table)
        cur.execute(
            f"""INSERT INTO judge_answers ({cols}, answered_at)
                SELECT {cols}, now()::TIMESTAMP FROM _judge_new_answers ON CONFLICT DO NOTHING"""
        )
