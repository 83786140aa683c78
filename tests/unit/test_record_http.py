"""`ragtriage record` against real local HTTP servers (pytest-httpserver, threaded): templates, headers, paths,
a server that sleeps past the timeout, one that answers 500, and the errors found before any request."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from typer.testing import CliRunner
from werkzeug import Request, Response

from ragtriage.cli import app
from ragtriage.record import RecordError, record_run
from ragtriage.record.build import HttpOptions, make_retriever, response_shape
from tests.record_helpers import plan, rows, write_dataset

TEMPLATE = '{"q": "{query}", "k": {k}, "user": {principal}, "f": {filters}, "id": "{case_id}"}'
PATHS = {"hits": "data.hits", "id": "cid", "document_id": "doc", "score": "s", "fallback": "meta.fb"}


@pytest.fixture
def server() -> Iterator[HTTPServer]:
    srv = HTTPServer(threaded=True)
    srv.start()
    yield srv
    srv.clear()
    if srv.is_running():
        srv.stop()


def answer(body: dict[str, Any]) -> dict[str, Any]:
    i = int(str(body["q"]).split()[-1])
    hits = [{"cid": f"d{i}#1", "doc": f"d{i}", "s": 2.0}, {"cid": f"d{i + 1}#1", "doc": f"d{i + 1}", "s": 1.0}]
    return {"data": {"hits": hits}, "meta": {"fb": i == 4, "index": "idx-9"}}


def http(url: str, unit: str = "chunk", paths: dict[str, str] | None = None, **kw: Any) -> Any:
    return make_retriever(url, response_shape(unit, paths or PATHS, ["index_version=meta.index"]), HttpOptions(**kw))


def test_records_over_http_with_headers_versions_and_fallbacks(
    server: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[dict[str, Any], str | None, str | None]] = []

    def handle(request: Request) -> Response:
        body = json.loads(request.data)
        seen.append((body, request.headers.get("Authorization"), request.headers.get("X-Team")))
        return Response(json.dumps(answer(body)), content_type="application/json")

    server.expect_request("/search", method="POST").respond_with_handler(handle)
    monkeypatch.setenv("SEARCH_TOKEN", "tok-s3cret-123")
    ds = write_dataset(tmp_path / "ds", n=6)
    retriever = http(server.url_for("/search"), request=TEMPLATE, headers=("X-Team: search",), token_env="SEARCH_TOKEN")
    result = record_run(plan(ds, tmp_path / "run"), retriever)
    assert result.complete
    body, auth, team = next(s for s in seen if s[0]["id"] == "q03")
    assert body == {
        "q": "question 3",
        "k": 3,
        "user": {"id": "u3", "groups": ["g"]},
        "f": {"language": "de"},
        "id": "q03",
    }
    assert (auth, team) == ("Bearer tok-s3cret-123", "search")
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q04"]["fallback"] is True and ev["q03"]["fallback"] is False
    assert rows(tmp_path / "run" / "results.jsonl")[0] == {
        "case_id": "q01",
        "stage": "final",
        "rank": 1,
        "document_id": "d1",
        "chunk_id": "d1#1",
        "score": 2.0,
    }
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["index_version"] == "idx-9"
    spec = manifest["record"]["retriever"]
    assert spec["headers"] == {"X-Team": "<redacted>", "Authorization": "$SEARCH_TOKEN"}
    assert spec["response"]["hits"] == "data.hits" and spec["request_template"] == TEMPLATE
    for f in (tmp_path / "run").iterdir():
        assert "tok-s3cret" not in f.read_text(), f.name


def test_a_server_sleeping_past_the_timeout_and_one_answering_500(server: HTTPServer, tmp_path: Path) -> None:
    def handle(request: Request) -> Response:
        body = json.loads(request.data)
        if body["id"] == "q02":
            time.sleep(3)
        if body["id"] == "q03":
            return Response("boom: index shard 7 unavailable", status=500)
        return Response(json.dumps(answer(body)), content_type="application/json")

    server.expect_request("/search").respond_with_handler(handle)
    ds = write_dataset(tmp_path / "ds", n=5)
    t0 = time.perf_counter()
    result = record_run(
        plan(ds, tmp_path / "run", timeout_s=0.4), http(server.url_for("/search"), request=TEMPLATE, timeout_s=0.4)
    )
    assert time.perf_counter() - t0 < 2.5  # the hanging request never held the recorder past --timeout
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q02"]["timed_out"] is True and ev["q02"]["status"] == "error"
    assert 400 <= ev["q02"]["latency_ms"] < 1500
    assert ev["q03"]["error"] == "HTTP 500: boom: index shard 7 unavailable" and ev["q03"]["timed_out"] is False
    assert (result.outcome.errors, result.outcome.timeouts) == (2, 1)
    assert {r["case_id"] for r in rows(tmp_path / "run" / "results.jsonl")} == {"q01", "q04", "q05"}


def test_pre_flight_errors(server: HTTPServer, tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", n=3)
    server.expect_request("/broken").respond_with_data("internal error", status=500)
    server.expect_request("/ok").respond_with_json({"results": [{"id": "x"}]})
    cases = [
        (http(server.url_for("/broken"), request=TEMPLATE), "the first request failed: HTTP 500: internal error"),
        (http(server.url_for("/ok"), request=TEMPLATE), "'data.hits' matches nothing in the first response"),
        (http("http://127.0.0.1:9/search", request=TEMPLATE, retries=0), "cannot reach http://127.0.0.1:9/search"),
    ]
    for retriever, message in cases:
        with pytest.raises(RecordError, match=message.replace("(", r"\(")):
            record_run(plan(ds, tmp_path / "run"), retriever)
        assert not (tmp_path / "run").exists()
    with pytest.raises(RecordError, match="environment variable NOPE_TOKEN"):
        http(server.url_for("/ok"), token_env="NOPE_TOKEN")


@pytest.mark.slow
def test_cli_exit_2_without_traceback_and_the_gate_prints_the_concurrency(server: HTTPServer, tmp_path: Path) -> None:
    runner = CliRunner()
    ds = write_dataset(tmp_path / "ds", n=6)
    base = ["record", "--dataset", str(ds), "--k", "3", "--no-progress"]
    bad = runner.invoke(app, [*base, "--out", str(tmp_path / "x"), "--retriever", "http://h/s", "--request", "{"])
    assert bad.exit_code == 2 and "--request is not valid JSON" in bad.output and "Traceback" not in bad.output
    gone = runner.invoke(app, [*base, "--out", str(tmp_path / "x"), "--retriever", "python:no_such_mod_q:f"])
    assert gone.exit_code == 2 and "cannot import no_such_mod_q" in gone.output

    server.expect_request("/search").respond_with_handler(
        lambda r: Response(json.dumps(answer(json.loads(r.data))), content_type="application/json")
    )
    args = ["--request", TEMPLATE, "--hits", "data.hits", "--id", "cid", "--document-id", "doc", "--score", "s"]
    ok = runner.invoke(
        app,
        [*base, "--out", str(tmp_path / "live"), "--retriever", server.url_for("/search"), "--concurrency", "5", *args],
    )
    assert ok.exit_code == 0, ok.output
    assert "recorded 6 of 6 cases" in ok.output and "at concurrency 5" in ok.output
    db = str(tmp_path / "t.duckdb")
    assert (
        runner.invoke(app, ["load", "--db", db, "--dataset", str(ds), "--run", str(tmp_path / "live")]).exit_code == 0
    )
    gate = tmp_path / "gate.toml"
    gate.write_text('[gate]\nname = "latency"\n\n[latency]\np95_ms = 60000\nmax_timeouts = 0\n')
    out = runner.invoke(app, ["gate", "--db", db, "--gate", str(gate), "--run", "live", "--baseline", "live"])
    assert "events at concurrency 5, 0 timeout(s)" in out.output, out.output


def test_connection_errors_are_retried_by_the_transport(tmp_path: Path) -> None:
    """The server starts listening 0.2 s after the first attempt: httpx's transport retries (after 0, 0.5, 1 s)
    reach it; without retries the recorder stops at once with "cannot reach"."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/search"
    ds = write_dataset(tmp_path / "ds", n=3)
    with pytest.raises(RecordError, match="cannot reach"):
        record_run(plan(ds, tmp_path / "run"), http(url, request=TEMPLATE, retries=0))
    servers: list[ThreadingHTTPServer] = []

    def start_late() -> None:
        time.sleep(0.2)
        servers.append(ThreadingHTTPServer(("127.0.0.1", port), Handler))
        servers[0].serve_forever()

    threading.Thread(target=start_late, daemon=True).start()
    try:
        result = record_run(plan(ds, tmp_path / "run"), http(url, request=TEMPLATE, retries=3))
        assert result.complete and result.outcome.errors == 0
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()


def test_get_sends_the_template_as_query_parameters(server: HTTPServer, tmp_path: Path) -> None:
    seen: list[dict[str, str]] = []

    def handle(request: Request) -> Response:
        seen.append(dict(request.args))
        i = int(request.args["q"].split()[-1])
        return Response(json.dumps({"hits": [{"doc": f"d{i}", "cid": f"d{i}#1"}]}), content_type="application/json")

    server.expect_request("/search", method="GET").respond_with_handler(handle)
    ds = write_dataset(tmp_path / "ds", n=3)
    shape = response_shape("chunk", {"hits": "hits", "id": "cid", "document_id": "doc"})
    template = '{"q": "{query}", "k": {k}, "user": {principal}, "f": {filters}}'
    retriever = make_retriever(server.url_for("/search"), shape, HttpOptions(request=template, method="get"))
    assert record_run(plan(ds, tmp_path / "run"), retriever).complete
    assert {"q": "question 3", "k": "3", "user": '{"id": "u3", "groups": ["g"]}', "f": '{"language": "de"}'} in seen
    assert {"q": "question 1", "k": "3", "user": '{"id": "u1", "groups": ["g"]}'} in seen  # null filters: left out
    with pytest.raises(RecordError, match="must be a JSON object"):
        make_retriever(server.url_for("/search"), shape, HttpOptions(request="[{query}]", method="GET"))
