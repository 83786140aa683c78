"""Fuzzing the trace readers: OTLP one request per line, one OTLP request pretty-printed, Langfuse observations and
Phoenix Parquet, plain, gzipped and bzip2-compressed. Hypothesis builds spans from near-valid parts (hostile
ids, scores and times of every JSON type, document indices that are no list position, attributes given twice,
value kinds the readers do not take) and damages bytes; every ``load --traces`` must end in exit 0 or 2, never
another and never a traceback; a refused load leaves every table of the store as it was, and an accepted one
holds only finite scores, single-valued ids and real durations.

Bounded for CI (``-m slow``): a fixed set of examples per format (``RAGTRIAGE_FUZZ_EXAMPLES`` raises it,
``RAGTRIAGE_FUZZ_RANDOM=1`` explores new ones), no deadline (a load is a real load into a file store)."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from ragtriage.cli import app
from tests.bad_inputs import digest, no_traceback

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("RAGTRIAGE_FUZZ_EXAMPLES", "10"))
FIXED = not os.environ.get("RAGTRIAGE_FUZZ_RANDOM")
TOPICS = "q1\tfirst query\nq2\tsecond query\n"
QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 1\n"
DOCS = "retrieval.documents"

# near-valid parts: the valid value most often, so a drawn export gets past its first fault to the next
texts = st.sampled_from(["first query"] * 6 + ["second query", "", " ", "\x1b[2J", "\u202e", "=1+1", "q" * 300])
ids = st.sampled_from(["d1", "d2", "d1", "d2", "", "d\x00", "=HYPERLINK(1)", "d" * 200])
numbers = st.sampled_from([0.5, 1, 0.25, -1, 0, 2**53 + 1, 10**40, 1e308, float("nan"), float("inf"), -0.0])
json_any = st.one_of(ids, ids, ids, numbers, numbers, st.none(), st.booleans(), st.lists(ids, max_size=2),
                    st.just({"a": 1}))  # fmt: skip
good_times = st.integers(1_700_000_000_000_000_000, 1_700_000_001_000_000_000).map(str)
times = st.one_of(
    good_times, good_times, good_times, st.integers(0, 2**64 + 5).map(str),
    st.sampled_from(["-5", "1" * 30, "abc", "", "1e9", "0x10"]), st.integers(0, 2**70), st.none(),
)  # fmt: skip
indices = st.sampled_from(["0", "1", "2", "0", "1", "00", "-1", "99999999999", "x", ""])


@st.composite
def any_value(draw: st.DrawFn, of: Any) -> dict[str, Any]:
    """An OTLP ``AnyValue`` of a drawn kind (the one a value of that type is written as, or another)."""
    v = draw(of)
    kind = draw(st.sampled_from(["natural"] * 6 + ["string", "int", "double", "bool", "array", "bare"]))
    if kind == "bare":
        return v  # type: ignore[no-any-return]
    if kind == "natural":
        kind = "string" if isinstance(v, str) else "double" if isinstance(v, float) else "int"
    key = {"string": "stringValue", "int": "intValue", "double": "doubleValue", "bool": "boolValue"}.get(kind)
    if key is None:
        return {"arrayValue": {"values": [{"stringValue": str(v)}]}}
    return {key: str(v) if kind == "int" else v}


@st.composite
def otlp_span(draw: st.DrawFn, n: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(["RETRIEVER"] * 4 + ["x"]))
    attrs = [{"key": "openinference.span.kind", "value": {"stringValue": kind}},
             {"key": "input.value", "value": draw(any_value(texts))}]  # fmt: skip
    for _ in range(draw(st.integers(0, 4))):
        i = draw(indices)
        attrs.append({"key": f"{DOCS}.{i}.document.id", "value": draw(any_value(ids))})
        attrs.append({"key": f"{DOCS}.{i}.document.score", "value": draw(any_value(numbers))})
    if draw(st.integers(0, 4)) == 0:
        attrs.append(draw(st.sampled_from(attrs)))  # an attribute given twice
    start = draw(times)
    end = (
        str(int(start) + draw(st.integers(0, 10**9)))
        if isinstance(start, str) and start.isdigit() and draw(st.booleans())
        else None
    )
    span: dict[str, Any] = {"traceId": f"t{n}", "spanId": f"s{n}", "attributes": attrs,
                            "startTimeUnixNano": start, "endTimeUnixNano": end or draw(times)}  # fmt: skip
    return {k: v for k, v in span.items() if v is not None}


@st.composite
def otlp_request(draw: st.DrawFn) -> dict[str, Any]:
    spans = [draw(otlp_span(n)) for n in range(draw(st.integers(1, 3)))]
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}


@st.composite
def observation(draw: st.DrawFn) -> dict[str, Any]:
    docs = [{"id": draw(json_any), "score": draw(json_any)} for _ in range(draw(st.integers(0, 3)))]
    start, end = st.just("2025-01-01T00:00:00Z"), st.just("2025-01-01T00:00:01Z")
    return {"id": draw(ids), "traceId": "t", "startTime": draw(st.one_of(start, start, start, json_any)),
            "endTime": draw(st.one_of(end, end, json_any)), "input": {"query": draw(texts)},
            "output": {"documents": docs} if draw(st.integers(0, 4)) else draw(json_any)}  # fmt: skip


def _text(obj: Any, indent: int | None = None) -> str:
    return json.dumps(obj, indent=indent)  # NaN and Infinity as the bare literals Python writes


@st.composite
def export(draw: st.DrawFn, fmt: str) -> tuple[str, bytes]:
    """(file name, bytes) of an export in ``fmt``, with its bytes damaged now and then."""
    if fmt == "otlp-lines":
        name, data = "spans.jsonl", "".join(_text(draw(otlp_request())) + "\n" for _ in range(draw(st.integers(1, 3))))
    elif fmt == "otlp-json":
        name, data = "spans.json", _text(draw(otlp_request()), indent=2)
    elif fmt == "langfuse":
        obs = [draw(observation()) for _ in range(draw(st.integers(1, 3)))]
        name, data = "observations.jsonl", "".join(_text(o) + "\n" for o in obs)
    else:
        return "spans.parquet", _phoenix(draw)
    raw = data.encode()
    at, junk = draw(st.integers(0, 2_000)), draw(st.sampled_from([b""] * 15 + [b"\xff", b"\x00", b'"', b"\n", b"["]))
    if junk:
        at %= max(len(raw), 1)
        raw = raw[:at] + junk + raw[at + len(junk) :]
    how = draw(st.sampled_from(["", ".gz", ".bz2"]))
    packed = gzip.compress(raw) if how == ".gz" else bz2.compress(raw) if how == ".bz2" else raw
    return name + how, packed


def _phoenix(draw: st.DrawFn) -> bytes:
    n = draw(st.integers(1, 3))
    docs = [[{"document.id": draw(ids), "document.score": float(draw(numbers))} for _ in range(draw(st.integers(0, 3)))]
            for _ in range(n)]  # fmt: skip
    start = draw(st.sampled_from(["2025-01-01 00:00:00", "not a time", "", "9999-99-99"]))
    table = pa.table({
        "context.trace_id": [f"t{i}" for i in range(n)], "context.span_id": [draw(ids) for _ in range(n)],
        "span_kind": [draw(st.sampled_from(["RETRIEVER", "RERANKER", "LLM"])) for _ in range(n)],
        "start_time": [start] * n, "end_time": ["2025-01-01 00:00:01"] * n,
        "attributes.input.value": [draw(texts) for _ in range(n)],
        "attributes.retrieval.documents": pa.array(docs, pa.list_(pa.struct([("document.id", pa.string()),
                                                                              ("document.score", pa.float64())]))),
    })  # fmt: skip
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trace-fuzz")
    (root / "q.txt").write_text(QRELS)
    (root / "t.tsv").write_text(TOPICS)
    db = root / "base.duckdb"
    res = invoke("load", "--db", db, "--qrels", root / "q.txt", "--topics", root / "t.tsv", "--no-precompute")
    assert res.exit_code == 0, res.output
    return db


def _load(base: Path, name: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(shutil.copy(base, Path(tmp) / "store.duckdb"))
        path = Path(tmp) / name
        path.write_bytes(data)
        before = digest(db)
        res = invoke("load", "--db", db, "--qrels", base.parent / "q.txt", "--topics", base.parent / "t.tsv",
                     "--traces", path, "--run-id", "fz", "--no-precompute")  # fmt: skip
        what = f"{name} {data[:400]!r}"
        assert no_traceback(res), f"{what}: {res.exception!r}"
        assert res.exit_code in (0, 2), f"{what}: exit {res.exit_code}\n{res.output}"
        assert "Traceback" not in res.output and "transaction is aborted" not in res.output.lower(), res.output
        if res.exit_code == 2:
            assert digest(db) == before, f"{what}: a refused load changed the store\n{res.output}"
        else:
            _accepted_is_sound(db, what)


def _accepted_is_sound(db: Path, what: str) -> None:
    """What a load took holds only values the readers promise: finite scores, ids that are one value (no list,
    object or bool text), latencies that are a duration."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        bad = con.execute(
            """SELECT (SELECT count(*) FROM results WHERE run_id = 'fz' AND (NOT isfinite(score)
                          OR chunk_id SIMILAR TO '[\\[{].*' OR chunk_id IN ('true', 'false'))),
                      (SELECT count(*) FROM events
                       WHERE run_id = 'fz' AND NOT (latency_ms >= 0 AND latency_ms < 1e15))"""
        ).fetchall()[0]
    finally:
        con.close()
    assert bad == (0, 0), f"{what}: accepted unsound values {bad}"


@pytest.mark.parametrize("fmt", ["otlp-lines", "otlp-json", "langfuse", "phoenix"])
def test_every_trace_reader_exits_0_or_2_and_never_half_writes(base: Path, fmt: str) -> None:
    @settings(
        max_examples=EXAMPLES,
        derandomize=FIXED,
        deadline=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking a real load takes minutes
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(file=export(fmt))
    def check(file: tuple[str, bytes]) -> None:
        _load(base, *file)

    check()
