"""`ragtriage judge` against a hostile chat-completions server on 127.0.0.1, on a small file store: the API key
echoed back (verbatim, in base64, in an error body and in an answer) appears in no output and no file; a body
trickled a byte at a time ends at the attempt's deadline; a 100 MB answer is refused unread and the store stays
usable; a run whose requests failed exits non-zero without a calibration or a dataset version."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug import Response

from ragtriage.http_secrets import REDACTED, redact, secret_forms
from ragtriage.judge import Scale, parse_answer
from tests.factory import make_store
from tests.judge_server import chat_server, completion
from tests.unit.test_judge_server import CASES, DOCS, LABELS, RUNS, judge, rows, script

SECRET = "sk-live-Hq7uX2pW9zKc4Rb8"
B64 = base64.b64encode(f"Bearer {SECRET}".encode()).decode()
B64_BASIC = base64.b64encode(f"user:{SECRET}".encode()).decode()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, runs=RUNS).close()
    return tmp_path / "store.duckdb"


def _dump(db: Path) -> str:
    """Every row of every table, as text."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return "\n".join(str(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)
    finally:
        con.close()


def _leaks(text: str) -> list[str]:
    """The forms of the key found in ``text``: verbatim, as sent, and base64 at each alignment."""
    cores = [base64.b64encode(b"x" * i + SECRET.encode()).decode()[4:-4] for i in range(3)]
    return [s for s in (SECRET, SECRET[4:], B64, B64_BASIC, *cores) if s in text]


def test_the_key_echoed_in_errors_and_answers_is_masked_everywhere(db: Path) -> None:
    def echo(headers: dict[str, str], pair: tuple[str, str]) -> Response | None:
        auth = headers.get("Authorization", "")
        if pair[1] == "Hold the reset button 10 s.":  # a 200 whose answer repeats the key, three ways
            text = f"grade: 3\nseen {auth}; as base64 {B64}; basic {B64_BASIC}"
            return Response(json.dumps(completion(text)), content_type="application/json")
        status = {"Refunds within 30 days.": 401, "Shipping is free.": 400}.get(pair[1], 500)
        body = json.dumps({"error": {"message": f"bad key {auth}", "headers": dict(headers), "b64": B64}})
        return Response(body, status=status, content_type="application/json")

    env = {"JUDGE_KEY": SECRET}
    with chat_server(script, respond=echo) as srv:
        code, out, err = judge(db, srv, "--calibrate", "4", "--retries", "1", "--backoff", "0.01",
                               "--api-key-env", "JUDGE_KEY", env=env)  # fmt: skip
        assert {h.get("Authorization") for h in srv.headers} == {f"Bearer {SECRET}"}  # sent all the same
    assert code == 1 and "3 failed" in err and "failed: HTTP 401" in err and REDACTED in err
    assert _leaks(out + err) == []
    stored = rows(db, "SELECT raw_answer, grade FROM judge_answers")
    assert len(stored) == 1 and stored[0][1] == 3 and REDACTED in str(stored[0][0])
    assert _leaks(_dump(db)) == []
    con = duckdb.connect(str(db))
    con.execute("CHECKPOINT")
    con.close()
    assert _leaks(db.read_bytes().decode("latin-1")) == []


def test_secret_forms_cover_every_base64_alignment() -> None:
    forms = secret_forms([SECRET])
    for lead in ("", "a", "ab", "Authorization: Bearer "):
        encoded = base64.b64encode((lead + SECRET + "!?").encode()).decode()
        for text in (encoded, encoded.replace("+", "-").replace("/", "_")):
            masked = redact(text, forms)
            assert REDACTED in masked
            assert base64.b64encode(SECRET.encode())[2:-2].decode() not in masked
    assert redact(f"x%20{SECRET}", forms) == f"x%20{REDACTED}"
    assert redact("a harmless answer: grade 2", forms) == "a harmless answer: grade 2"


@pytest.mark.slow  # a real body trickled for seconds
def test_a_trickled_body_ends_at_the_attempts_deadline(db: Path) -> None:
    sent: list[int] = []

    def trickle(headers: dict[str, str], pair: tuple[str, str]) -> Response:
        body = json.dumps(completion("grade: 1")).encode()  # complete after ~len(body) * 0.1 s (tens of seconds)

        def drip() -> Iterator[bytes]:
            for i in range(len(body)):
                sent.append(i)
                yield body[i : i + 1]
                time.sleep(0.1)

        return Response(drip(), content_type="application/json")

    with chat_server(script, respond=trickle) as srv:
        code, _, err = judge(db, srv, "--calibrate", "4", "--timeout", "1", "--retries", "0")
    assert code == 1
    assert err.count("no complete answer within 1 s (--timeout)") == 3  # the first few failures are listed
    assert "4 failed" in err
    assert rows(db, "SELECT count(*) FROM judge_answers") == [(0,)]  # each read was quick; the answer never came
    assert len(sent) < 4 * len(json.dumps(completion("grade: 1")))


@pytest.mark.slow  # a 100 MB body offered over a socket
def test_a_huge_answer_is_refused_unread_and_the_store_stays_usable(db: Path) -> None:
    served: list[int] = []

    def huge(headers: dict[str, str], pair: tuple[str, str]) -> Response:
        def body() -> Iterator[bytes]:
            yield b'{"choices": [{"message": {"content": "grade: 1 '
            for _ in range(100):
                served.append(1)
                yield b" " * (1 << 20)
            yield b'"}}]}'

        return Response(body(), content_type="application/json")

    with chat_server(script, respond=huge) as srv:
        code, _, err = judge(db, srv, "--calibrate", "4", "--retries", "0", "--concurrency", "1")
    assert code == 1
    assert "the answer is larger than 1048576 bytes: not read, not kept" in err
    assert len(served) < 4 * 100  # no answer was read to its end
    assert rows(db, "SELECT count(*) FROM judge_answers") == [(0,)]
    assert rows(db, "SELECT status FROM judge_sessions") == [("interrupted",)]
    wal = db.with_name(db.name + ".wal")
    assert not wal.exists() or wal.stat().st_size < 1 << 20
    with chat_server(script) as srv:
        code, _, err = judge(db, srv, "--calibrate", "4", "--resume")
    assert code == 0, err
    assert rows(db, "SELECT status FROM judge_sessions") == [("done",)]


def test_fill_force_writes_no_version_without_judge_labels(db: Path) -> None:
    with chat_server(script, fail_first=9) as srv:
        code, _, err = judge(db, srv, "--fill", "--runs", "r1", "--force", "--retries", "0")
    assert code == 1 and "no dataset version is written" in err
    assert rows(db, "SELECT count(*) FROM datasets") == [(1,)]
    with chat_server(lambda q, p: "no idea") as srv:  # every answer arrives, none parses
        code, _, err = judge(db, srv, "--fill", "--runs", "r1", "--force", "--resume")
    assert code == 1 and "no judged pair has an answer that parsed" in err
    assert rows(db, "SELECT count(*) FROM datasets") == [(1,)]
    assert rows(db, "SELECT count(*) FROM judge_sessions WHERE status = 'running'") == [(0,)]


GRADE_WORDS = st.sampled_from(["grade", "Grade", "score", "##final score", "GRADE", "note"])
DIGITS = st.text(alphabet="0123456789\u0663\uff13\u00b2+-\u2212 ", min_size=0, max_size=4)
PIECES = st.one_of(
    st.builds(lambda w, sep, d: f"{w}{sep}{d}", GRADE_WORDS, st.sampled_from([": ", "=", " : ", ":"]), DIGITS),
    st.text(max_size=12),
    st.sampled_from(["\n", " ", "Actually ", "\x1b[2J", "\u202e", ".", "3", "\n2\n"]),
)
OTHER_DIGITS = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=8).map("".join), st.integers(0, 3), st.integers(0, 4), st.sampled_from("0123\u0663"))
def test_parse_answer_never_raises_and_gives_one_grade_or_none(text: str, low: int, span: int, later: str) -> None:
    scale = Scale(low, low + span, "")
    parsed = parse_answer(text, scale)
    assert (parsed.grade is None) != (parsed.problem is None)
    if parsed.grade is None:
        return
    assert scale.grade_min <= parsed.grade <= scale.grade_max
    assert str(parsed.grade) in text  # read from the text's own ASCII digits
    assert parse_answer(text + f"\nActually grade: {later}", scale).grade is None  # a second grade: none
    assert parse_answer(text.translate(OTHER_DIGITS), scale).grade is None  # another script's digits: none
    for sign in "+-":
        assert parse_answer(f"grade: {sign}{parsed.grade}", scale).grade is None


def test_a_store_that_fails_mid_session_leaves_no_session_running(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ragtriage.judge.session as session

    def refuse(con: duckdb.DuckDBPyConnection, rows: list[dict[str, object]]) -> None:
        raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block")

    monkeypatch.setattr(session, "store_answers", refuse)
    with chat_server(script) as srv:
        code, _, err = judge(db, srv, "--calibrate", "4")
    assert code == 2 and "Out of Memory" in err and "Traceback" not in err
    assert rows(db, "SELECT status FROM judge_sessions") == [("interrupted",)]
    monkeypatch.undo()
    with chat_server(script) as srv:
        assert judge(db, srv, "--calibrate", "4", "--resume")[0] == 0


def test_a_declared_oversized_body_is_refused_before_it_is_read(db: Path) -> None:
    big = json.dumps(completion("grade: 1 " + " " * (2 << 20))).encode()  # Content-Length says 2 MiB

    with chat_server(script, respond=lambda h, p: Response(big, content_type="application/json")) as srv:
        code, _, err = judge(db, srv, "--calibrate", "4", "--retries", "0")
    assert code == 1 and err.count("the answer is larger than 1048576 bytes") == 3 and "4 failed" in err
    assert rows(db, "SELECT count(*) FROM judge_answers") == [(0,)]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.dictionaries(
            st.sampled_from(["choices", "message", "content", "usage", "prompt_tokens", "0"]), kids, max_size=3
        )
    ),  # fmt: skip
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=64)))
def test_any_response_body_is_an_answer_or_an_error_never_an_exception(raw: bytes) -> None:
    from ragtriage.judge.client import _reply

    reply = _reply(raw)
    assert (reply.text is None) != (reply.error is None)
    assert reply.prompt_tokens is None or isinstance(reply.prompt_tokens, int)
