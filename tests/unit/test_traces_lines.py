"""One OTLP request per line: the pyarrow blocks and DuckDB's ``from_json`` fallback stage the same spans and
documents, whatever the block boundaries, blank lines, CRLF or a byte-order mark; a line longer than the line
reader takes is streamed as a document rather than refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.contract import compression
from ragtriage.contract.traces import TraceOptions, otlp, otlp_docs, stage_traces
from ragtriage.contract.traces.tables import doc_score

pytest.importorskip("openinference.semconv")
pytest.importorskip("opentelemetry.proto")
from tests.trace_fixtures import Retrieval, write_otlp  # noqa: E402

OPTS = TraceOptions(case_id_attribute="metadata.case_id", principal_attribute="user.id", groups_attribute="user.groups")


def _retrievals(n: int = 23) -> list[Retrieval]:
    out = []
    for i in range(n):
        docs = [
            (f"D{(i * 7919 + j * 104729) % 10**9:09d}", round(1 - j / 10, 3), f"text {i}.{j}") for j in range(i % 6)
        ]
        attrs: dict[str, Any] = {"metadata.case_id": f"c{i}", "user.id": f"u{i % 3}", "user.groups": ["hr", "eng"]}
        out.append(Retrieval(f"query {i} \x1b[2J =SUM(A1)", docs, i + 1, latency_ms=3.5 + i, attrs=attrs,
                             error="boom" if i == 5 else None))  # fmt: skip
    return out


def _staged(path: Path, tmp_path: Path) -> tuple[list[Any], list[Any], list[Any]]:
    con = duckdb.connect(str(tmp_path / f"s{len(list(tmp_path.glob('s*.duckdb')))}.duckdb"))
    try:
        out = stage_traces(con, [path], OPTS)
        spans = con.execute(
            "SELECT line, trace_id, span_id, parent_id, kind, query, started, latency_ms, error, case_attr, principal, "
            "groups, resource FROM trc_spans ORDER BY trace_id, span_id"
        ).fetchall()
        spans = [(*s[:-1], json.loads(s[-1])) for s in spans]  # the document reader spaces its JSON differently
        docs = con.execute(
            f"SELECT s.span_id, d.role, d.idx, d.document_id, {doc_score('d')}, d.content, d.metadata "
            "FROM trc_docs d JOIN trc_spans s USING (sid) ORDER BY ALL"
        ).fetchall()
        return [str(f) for f in out.findings], spans, docs
    finally:
        con.close()


def test_pyarrow_blocks_and_the_duckdb_fallback_stage_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_otlp(
        tmp_path / "t.jsonl", _retrievals(), per_line=4, resource={"service.name": "rag", "index.version": "v7"}
    )
    fast = _staged(path, tmp_path)
    assert fast[0] == [] and len(fast[1]) == 23 and len(fast[2]) == sum(i % 6 for i in range(23))
    assert fast[1][5][8] == "boom" and fast[1][0][11] == ["hr", "eng"] and fast[1][0][10] == "u0"
    assert fast[1][0][6] == 1_700_000_000_000.0 and fast[1][1][7] == 4.5
    assert fast[1][0][12] == {"service.name": "rag", "index.version": "v7"}
    monkeypatch.setattr(otlp, "_BLOCK", 700)  # lines straddle blocks
    assert _staged(path, tmp_path) == fast
    monkeypatch.setattr(otlp, "_parse", lambda line0, data, feeds: None)  # every block through from_json
    assert _staged(path, tmp_path)[1:] == fast[1:]


def test_blank_lines_crlf_and_bom_keep_each_spans_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = write_otlp(tmp_path / "t.jsonl", _retrievals(6), per_line=2).read_text().splitlines()
    bad = write_otlp(tmp_path / "b.jsonl", [Retrieval("  ", [("d1", 1.0, "x")], 99)], per_line=1).read_text()
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(b"\xef\xbb\xbf" + f"{plain[0]}\r\n\r\n{plain[1]}\r\n   \n{bad.strip()}\r\n{plain[2]}".encode())
    findings, spans, _ = _staged(odd, tmp_path)
    assert any(f"{odd}:5: query: span" in f for f in findings), findings
    assert sorted({s[0] for s in spans}) == [1, 3, 5, 6]
    monkeypatch.setattr(otlp, "_parse", lambda line0, data, feeds: None)
    findings2, spans2, _ = _staged(odd, tmp_path)
    assert findings2 == findings and spans2 == spans


def test_a_line_past_the_line_limit_is_streamed_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_otlp(tmp_path / "one.json", _retrievals(), per_line=100)  # one request on one line
    expected = _staged(path, tmp_path)
    monkeypatch.setattr(compression, "MAX_LINE", 1000)
    monkeypatch.setattr(compression, "_scanned", {})
    monkeypatch.setattr(otlp, "_BLOCK", 300)  # the one-pass read sees a long line only across blocks
    assert not otlp.longest_line_fits(path)
    read = _spy(monkeypatch)
    streamed = _staged(path, tmp_path)
    assert streamed[0] == [] and streamed[1:] == expected[1:]
    assert read == ["gave up", "document"]  # the one-pass read gave up; nothing it staged is left twice


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How each file was read: ``once`` (the one-pass read), ``gave up`` (it fell back), ``document``."""
    from ragtriage.contract.traces import otlp

    seen: list[str] = []
    once, walk = otlp.read_otlp_once, otlp._Walk.request

    def read_once(*a: Any) -> Any:
        out = once(*a)
        seen.append("gave up" if out is None else "once")
        return out

    def request(self: Any, js: Any) -> None:
        if not seen or seen[-1] != "document":
            seen.append("document")
        walk(self, js)

    monkeypatch.setattr(otlp, "read_otlp_once", read_once)
    monkeypatch.setattr(otlp._Walk, "request", request)
    return seen


def test_one_pass_read_hashes_and_refuses_as_the_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-pass read of a plain file of one request per line records the file's sha256 on the way; a NUL byte
    in a later block is refused as the text scan refuses it (file, line, field), with nothing staged from the
    blocks before it; a gzipped file is scanned first, as before."""
    import gzip
    import hashlib

    from ragtriage.contract import digest
    from ragtriage.contract.staging import compression_findings

    path = write_otlp(tmp_path / "t.jsonl", _retrievals(), per_line=2)
    monkeypatch.setattr(otlp, "_BLOCK", 500)
    read = _spy(monkeypatch)
    con = duckdb.connect()
    assert stage_traces(con, [path], OPTS, digest=True).findings == [] and read == ["once"]
    assert digest.sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest._known[digest._key(path)].done()  # taken on the way, not read again
    lines = path.read_bytes().splitlines(keepends=True)
    nul = tmp_path / "nul.jsonl"
    nul.write_bytes(b"".join(lines[:-1]) + lines[-1][:40] + b"\0" + lines[-1][40:])
    expected = [str(f) for f in compression_findings(nul)]
    assert expected and f"{nul}:{len(lines)}" in expected[0], expected
    read.clear()
    con = duckdb.connect()
    assert [str(f) for f in stage_traces(con, [nul], OPTS).findings] == expected and read == ["gave up"]
    staged = [con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in ("trc_sp", "trc_kv", "trc_docs",
              "trc_docs_lines", "trc_res")]  # fmt: skip
    assert staged == [0, 0, 0, 0, 0]
    zipped = tmp_path / "t.jsonl.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    read.clear()
    assert _staged(zipped, tmp_path)[1:] == _staged(path, tmp_path)[1:] and read == ["gave up", "once"]


def test_validate_reads_a_trace_export_as_load_would(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragtriage.cli import app

    runner = CliRunner()
    good = write_otlp(tmp_path / "good.jsonl", _retrievals(5), per_line=2)
    res = runner.invoke(app, ["validate", str(good)])
    assert res.exit_code == 0 and f"{good}: valid (0 warning(s))" in res.output, res.output
    bad = write_otlp(tmp_path / "bad.json", [Retrieval("q", [("", 0.5, "x"), ("d", float("nan"), "y")], 1)])
    res = runner.invoke(app, ["validate", str(bad)])
    assert res.exit_code == 2, res.output
    assert f"{bad}:" in res.output and "document.id: a document without an id" in res.output, res.output
    assert "document.score: a document score that is not a finite number: 'NaN'" in res.output
    obs = tmp_path / "observations.jsonl"
    obs.write_text('{"id": "o1", "traceId": "t", "input": "q", "output": [{"score": 1}]}\n')
    res = runner.invoke(app, ["validate", str(obs), "--table", "traces"])
    assert res.exit_code == 2 and f"{obs}:1: document.id: a document without an id" in res.output, res.output


def _line(attrs: list[tuple[str, dict[str, Any]]], *, snake: bool = False, trace: str = "t1") -> str:
    """One request of one retriever span, its document attributes as given (any order, any value kind)."""
    kind = {"stringValue": "RETRIEVER"}
    kv = [{"key": "openinference.span.kind", "value": kind}, {"key": "input.value", "value": {"stringValue": "q"}}]
    kv += [{"key": k, "value": v} for k, v in attrs]
    span = {"traceId": trace, "spanId": "s1", "startTimeUnixNano": "1000000", "endTimeUnixNano": "3000000",
            "attributes": kv}  # fmt: skip
    text = json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]})
    if snake:
        for camel, snake_key in (("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"),
                                 ("traceId", "trace_id"), ("spanId", "span_id"), ("stringValue", "string_value"),
                                 ("doubleValue", "double_value"), ("intValue", "int_value"),
                                 ("TimeUnixNano", "_time_unix_nano")):  # fmt: skip
            text = text.replace(f'{camel}"', f'{snake_key}"')
    return text


def _docs_of(path: Path, tmp_path: Path) -> list[Any]:
    con = duckdb.connect(str(tmp_path / f"d{len(list(tmp_path.glob('d*.duckdb')))}.duckdb"))
    try:
        assert stage_traces(con, [path], TraceOptions()).findings == []
        return con.execute(
            f"SELECT s.trace_id, d.role, d.idx, d.document_id, {doc_score('d')}, d.content, d.rank "
            "FROM trc_docs d JOIN trc_spans s USING (sid) ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


D = "retrieval.documents"


def test_documents_pivoted_per_block_keep_sqls_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attributes out of order, an index with a leading zero, a gap, a key that only looks like a document's,
    an integer score: pivoted in Arrow, in SQL (a block the Arrow pivot passes on), and from DuckDB's parse, the
    same documents, ranked by index."""
    plain = [
        (f"{D}.2.document.id", {"stringValue": "b"}), (f"{D}.2.document.score", {"doubleValue": 0.5}),
        (f"{D}.07.document.id", {"stringValue": "c"}), (f"{D}.0.document.title", {"stringValue": "zz"}),
        (f"{D}.0.document.score", {"intValue": "1"}), (f"{D}.0.document.id", {"stringValue": "a"}),
        (f"{D}.0.document.content", {"stringValue": "=SUM(A1) \x1b[2J"}),
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text(_line(plain) + "\n")
    expected = [
        ("t1", "retrieved", 0, "a", 1.0, "=SUM(A1) \x1b[2J", 1),
        ("t1", "retrieved", 2, "b", 0.5, None, 2),
        ("t1", "retrieved", 7, "c", None, None, 3),
    ]
    pivoted = _pivots(monkeypatch)
    assert _docs_of(path, tmp_path) == expected and pivoted == [True]
    monkeypatch.setattr(otlp_docs, "pivot", lambda *a: None)  # the SQL pivot of the block
    assert _docs_of(path, tmp_path) == expected
    monkeypatch.setattr(otlp, "_parse", lambda line0, data, feeds: None)
    assert _docs_of(path, tmp_path) == expected


def _pivots(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the Arrow pivot took each block."""
    seen: list[bool] = []
    real = otlp_docs.pivot

    def pivot(*a: Any) -> Any:
        out = real(*a)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(otlp_docs, "pivot", pivot)
    return seen


def test_a_block_the_arrow_pivot_cannot_take_goes_through_sql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bool content, a double id formatted by DuckDB: the Arrow pivot passes the block on; the documents equal
    DuckDB's parse of it."""
    odd = [
        (f"{D}.0.document.id", {"stringValue": "b"}),
        (f"{D}.1.document.id", {"doubleValue": 12.0}), (f"{D}.1.document.content", {"boolValue": True}),
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text(_line(odd) + "\n")
    expected = [("t1", "retrieved", 0, "b", None, None, 1), ("t1", "retrieved", 1, "12.0", None, "true", 2)]
    pivoted = _pivots(monkeypatch)
    assert _docs_of(path, tmp_path) == expected and pivoted == [False]
    monkeypatch.setattr(otlp, "_parse", lambda line0, data, feeds: None)
    assert _docs_of(path, tmp_path) == expected


def test_a_block_is_parsed_again_with_the_rarer_kinds_when_a_kept_value_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block is parsed first without the values' bool and array kinds: one where an attribute nobody reads has
    one is taken as parsed; one where a kept attribute (a document's) has one is parsed again with them, and so is
    every block parsed after it."""
    unread = [(f"{D}.0.document.id", {"stringValue": "a"}), ("llm.streaming", {"boolValue": True}),
              ("tags", {"arrayValue": {"values": [{"stringValue": "x"}]}})]  # fmt: skip
    kept = [(f"{D}.0.document.id", {"stringValue": "b"}), (f"{D}.0.document.content", {"boolValue": False})]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(a, trace=t) + "\n" for a, t in ((unread, "u"), (kept, "k"), (unread, "v"),
                                                                   (unread, "w"))))  # fmt: skip
    monkeypatch.setattr(otlp, "_BLOCK", 64)  # one line per block
    rare: list[bool] = []
    real = otlp._parse

    def parse(line0: int, data: bytearray, feeds: int, rare_kinds: bool = False) -> Any:
        rare.append(rare_kinds)
        return real(line0, data, feeds, rare_kinds)

    monkeypatch.setattr(otlp, "_parse", lambda *a, rare=False: parse(*a, rare))
    got = _docs_of(path, tmp_path)
    assert got == [("k", "retrieved", 0, "b", None, "false", 1)] + [
        (t, "retrieved", 0, "a", None, None, 1) for t in ("u", "v", "w")
    ]
    # u, k and v (parsed ahead while k was stored) without them; k again, and w, with them
    assert sorted(rare) == [False, False, False, True, True]


def test_camel_and_snake_blocks_and_escaped_keys_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of one key style are parsed with that style's schema only: a file mixing styles line by line, and a
    snake_case key spelled with a JSON escape, still give every span."""
    docs = [(f"{D}.0.document.id", {"stringValue": "a"}), (f"{D}.0.document.score", {"doubleValue": 0.25})]
    camel, snake = _line(docs, trace="c"), _line(docs, snake=True, trace="s")
    escaped = snake.replace('"trace_id"', '"trace\\u005fid"').replace('"resource_spans"', '"resource\\u005fspans"')
    escaped = escaped.replace('"s"', '"e"')
    path = tmp_path / "t.jsonl"
    path.write_text(f"{camel}\n{snake}\n{escaped}\n")
    monkeypatch.setattr(otlp, "_BLOCK", len(camel) + 1)  # one line per block
    got = _docs_of(path, tmp_path)
    assert got == [(t, "retrieved", 0, "a", 0.25, None, 1) for t in ("c", "e", "s")]


def test_arrow_given_to_a_statement_is_let_go_inside_the_transaction() -> None:
    """A load streams its batches through one transaction: what DuckDB scanned must not wait for the commit."""
    import pyarrow as pa

    from ragtriage.contract.arrow_scan import run_on_arrow

    con = duckdb.connect()
    con.execute("CREATE TABLE t (s VARCHAR)")
    con.execute("BEGIN")
    before = pa.total_allocated_bytes()
    for _ in range(5):
        batch = pa.table({"s": pa.array([f"a string long enough not to be inlined {i}" for i in range(50_000)])})
        run_on_arrow(con, "__b", batch, "INSERT INTO t SELECT s FROM __b")
        del batch
    assert pa.total_allocated_bytes() - before < 1 << 20
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(250_000,)]
    con.execute("COMMIT")


@pytest.mark.parametrize("lines", [0, 1, 255, 256, 257, 1000])
def test_line_feeds_found_one_by_one_then_counted_agree(lines: int) -> None:
    """A block's line feeds, looked for one by one and then counted: as many as ``bytes.count`` finds, to any end."""
    data = bytearray(b"\n".join(b"x" * (i % 4) for i in range(lines + 1)))
    for end in {0, len(data) // 3, len(data) - 1, len(data)} - {-1}:
        assert otlp._feeds(data, end) == data[:end].count(b"\n")
