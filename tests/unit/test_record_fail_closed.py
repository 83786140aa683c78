# ruff: noqa: F811  (the server fixture is imported from test_record_http)
"""`ragtriage record` against a real local HTTP server: retries on 429/502/503/504 with Retry-After honoured and
bounded, never on other 4xx; every secret the recorder knows redacted from what it writes; URL credentials never
silently replace an explicit Authorization header; a slow first request is that case's timeout, not the end of
the recording; an --out that is a file or a FIFO is refused."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from typer.testing import CliRunner
from werkzeug import Request, Response

from ragtriage.cli import app
from ragtriage.record import RecordError, record_run
from tests.record_helpers import plan, rows, write_dataset
from tests.unit.test_record_http import TEMPLATE, answer, http, server  # noqa: F401  (fixture)


def _flaky(fail: dict[str, list[tuple[int, dict[str, str]]]], seen: list[str]) -> Any:
    """A handler answering each case's scripted failures (status, headers) first, then the hits."""

    def handle(request: Request) -> Response:
        body = json.loads(request.data)
        seen.append(body["id"])
        script = fail.get(body["id"])
        if script:
            status, headers = script.pop(0)
            return Response(f"try later ({status})", status=status, headers=headers)
        return Response(json.dumps(answer(body)), content_type="application/json")

    return handle


def test_429_and_5xx_are_retried_honouring_retry_after(server: HTTPServer, tmp_path: Path) -> None:
    seen: list[str] = []
    fail = {
        "q02": [(429, {"Retry-After": "1"})],
        "q03": [(503, {}), (502, {})],
        "q04": [(504, {}), (504, {}), (504, {})],  # one more than --retries 2: the case's error
        "q05": [(404, {})],  # never retried
        "q06": [(429, {"Retry-After": "3600"})],  # beyond the bound: not waited for
    }
    server.expect_request("/search").respond_with_handler(_flaky(fail, seen))
    ds = write_dataset(tmp_path / "ds", n=6)
    t0 = time.perf_counter()
    result = record_run(plan(ds, tmp_path / "run"), http(server.url_for("/search"), request=TEMPLATE, retries=2))
    took = time.perf_counter() - t0
    assert 1.0 <= took < 20
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q02"]["status"] == "ok" and ev["q02"]["latency_ms"] >= 1000  # waited the asked second
    assert ev["q03"]["status"] == "ok"
    assert ev["q04"]["error"] == "HTTP 504: try later (504)"
    assert ev["q05"]["error"] == "HTTP 404: try later (404)"
    assert ev["q06"]["error"] == "HTTP 429: try later (429)"
    assert seen.count("q02") == 2 and seen.count("q03") == 3 and seen.count("q04") == 3
    assert seen.count("q05") == 1 and seen.count("q06") == 1
    assert result.outcome.errors == 3
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    policy = manifest["record"]["retriever"]["retries_on_status"]
    assert policy["statuses"] == [429, 502, 503, 504] and policy["max_retries"] == 2
    assert policy["honours_retry_after"] is True and policy["max_wait_s"] == 30.0


def test_error_bodies_echoing_secrets_are_redacted(
    server: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def handle(request: Request) -> Response:
        body = json.loads(request.data)
        if body["id"] == "q03":
            echo = f"bad request; headers: {dict(request.headers)}; url: {request.url}"
            return Response(echo, status=500)
        return Response(json.dumps(answer(body)), content_type="application/json")

    server.expect_request("/search").respond_with_handler(handle)
    monkeypatch.setenv("SEARCH_TOKEN", "tok-s3cret-123")
    ds = write_dataset(tmp_path / "ds", n=4)
    template = TEMPLATE[:-1] + ', "api_key": "tmpl-s3cret-456"}'
    retriever = http(server.url_for("/search") + "?sig=url-s3cret-789", request=template,
                     headers=("X-Api-Key: hdr-s3cret-000",), token_env="SEARCH_TOKEN")  # fmt: skip
    record_run(plan(ds, tmp_path / "run"), retriever)
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q03"]["error"].startswith("HTTP 500: bad request") and "<redacted>" in ev["q03"]["error"]
    for f in (tmp_path / "run").iterdir():
        text = f.read_text()
        for secret in ("tok-s3cret-123", "tmpl-s3cret-456", "url-s3cret-789", "hdr-s3cret-000"):
            assert secret not in text, (f.name, secret)


def test_url_credentials_do_not_silently_replace_an_authorization_header(server: HTTPServer) -> None:
    url = server.url_for("/search").replace("http://", "http://alice:pw-s3cret@")
    with pytest.raises(RecordError, match="URL holds credentials .* and an Authorization header"):
        http(url, request=TEMPLATE, headers=("Authorization: Bearer explicit",))


def test_basic_credentials_in_the_url_are_redacted_from_errors(server: HTTPServer, tmp_path: Path) -> None:
    def handle(request: Request) -> Response:
        body = json.loads(request.data)
        if body["id"] == "q02":
            return Response(f"denied for {request.headers.get('Authorization')}", status=500)
        return Response(json.dumps(answer(body)), content_type="application/json")

    server.expect_request("/search").respond_with_handler(handle)
    ds = write_dataset(tmp_path / "ds", n=3)
    url = server.url_for("/search").replace("http://", "http://alice:pw-s3cret@")
    record_run(plan(ds, tmp_path / "run"), http(url, request=TEMPLATE))
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q02"]["error"] == "HTTP 500: denied for Basic <redacted>"
    assert "pw-s3cret" not in (tmp_path / "run" / "run.json").read_text()


def test_a_slow_first_request_is_that_cases_timeout(server: HTTPServer, tmp_path: Path) -> None:
    def handle(request: Request) -> Response:
        body = json.loads(request.data)
        if body["id"] == "q01":
            time.sleep(1.0)
        return Response(json.dumps(answer(body)), content_type="application/json")

    server.expect_request("/search").respond_with_handler(handle)
    ds = write_dataset(tmp_path / "ds", n=4)
    result = record_run(
        plan(ds, tmp_path / "run", timeout_s=0.3), http(server.url_for("/search"), request=TEMPLATE, timeout_s=0.3)
    )
    assert result.complete and result.outcome.recorded == 4
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q01"]["timed_out"] is True and ev["q01"]["status"] == "error"
    assert all(ev[c]["status"] == "ok" for c in ("q02", "q03", "q04"))


def test_configuration_errors_still_stop_at_the_start(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request("/search").respond_with_data("no such index", status=400)
    ds = write_dataset(tmp_path / "ds", n=3)
    with pytest.raises(RecordError, match="the first request failed: HTTP 400: no such index"):
        record_run(plan(ds, tmp_path / "run"), http(server.url_for("/search"), request=TEMPLATE))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_out_naming_a_file_or_fifo_exits_2(server: HTTPServer, tmp_path: Path, kind: str) -> None:
    server.expect_request("/search").respond_with_handler(lambda r: Response(json.dumps(answer(json.loads(r.data)))))
    ds = write_dataset(tmp_path / "ds", n=2)
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("keep me", encoding="utf-8")
    else:
        os.mkfifo(out)
    res = CliRunner().invoke(app, ["record", "--dataset", str(ds), "--k", "3", "--no-progress", "--out", str(out),
                                   "--retriever", server.url_for("/search"), "--request", TEMPLATE,
                                   "--hits", "data.hits", "--id", "cid", "--document-id", "doc"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "exists and is not a folder" in res.output and "Traceback" not in res.output
    if kind == "file":
        assert out.read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize(("option", "value"), [("--timeout", "nan"), ("--timeout", "inf"), ("--rate", "nan")])
def test_a_float_option_that_is_not_finite_exits_2_before_asking(
    server: HTTPServer, tmp_path: Path, option: str, value: str
) -> None:
    # click's range check passes NaN (every comparison with it is false): the command checks finiteness itself
    ds = write_dataset(tmp_path / "ds", n=2)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["record", "--dataset", str(ds), "--k", "3", "--no-progress", "--out", str(out),
                                   "--retriever", server.url_for("/search"), "--request", TEMPLATE,
                                   "--hits", "data.hits", "--id", "cid", "--document-id", "doc",
                                   option, value])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert f"{option} {value}: give a finite number" in res.output and "Traceback" not in res.output
    assert not out.exists() and server.log == []
