"""The sample's bm25 retriever, served over HTTP by scripts/sample_retriever.py and recorded with
`ragtriage record`, gives the bundled sample_runs/runs/bm25 back: the same result rows and the same metrics."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtriage.metrics import per_case, summarize
from ragtriage.record import RecordOptions, RecordPlan, record_run
from ragtriage.record.build import HttpOptions, filters_applied, make_retriever, response_shape
from ragtriage.record.python_adapter import load_target
from ragtriage.store import connect, load_dataset, load_run
from tests.record_helpers import rows

pytest.importorskip("bm25s")

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"
SCRIPT = ROOT / "scripts" / "sample_retriever.py"


@pytest.fixture(scope="module")
def sample_server() -> Iterator[str]:
    serve = load_target(f"{SCRIPT}:serve")
    load_target(f"{SCRIPT}:engines")()  # build the index before timing anything
    server: Any = serve(0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/search/bm25"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_recorded_bm25_equals_the_bundled_run(sample_server: str, tmp_path: Path) -> None:
    # The bundled run passed each case's own principal and filters and applied all filters but effective_on:
    # the server's bm25 does the same with what the recorder sends, so nothing needs overriding here.
    shape = response_shape(
        "chunk", {"hits": "results", "id": "chunk_id", "document_id": "document_id", "score": "score"},
        ["index_version=index_version"],
    )  # fmt: skip
    retriever = make_retriever(sample_server, shape, HttpOptions(concurrency=8))
    out = tmp_path / "bm25-live"
    applied = filters_applied("acl,tenant,language,region,product,doc_type,effective_on=false")
    result = record_run(
        RecordPlan(SAMPLE / "dataset", out, RecordOptions(k=10, concurrency=8), filters_applied=applied), retriever
    )
    assert result.complete and result.outcome.errors == 0
    assert (out / "results.jsonl").read_bytes() == (SAMPLE / "runs" / "bm25" / "results.jsonl").read_bytes()
    bundled_events = rows(SAMPLE / "runs" / "bm25" / "events.jsonl")
    flags = ("case_id", "timed_out", "empty", "fallback", "status", "error")
    assert [{f: e[f] for f in flags} for e in rows(out / "events.jsonl")] == [
        {f: e[f] for f in flags} for e in bundled_events
    ]
    assert result.manifest["index_version"] == "idx-2024-11-28"
    assert result.manifest["filters_applied"] == load_run_manifest()["filters_applied"]

    con = connect(tmp_path / "t.duckdb")
    load_dataset(con, SAMPLE / "dataset")
    load_run(con, SAMPLE / "runs" / "bm25")
    load_run(con, out)
    live, bundled = summarize(con, "bm25-live", (1, 5, 10)), summarize(con, "bm25", (1, 5, 10))
    assert [(r.name, r.mean, r.n) for r in live.rows] == [(r.name, r.mean, r.n) for r in bundled.rows]
    assert per_case(con, "bm25-live").equals(per_case(con, "bm25"))


def load_run_manifest() -> dict[str, Any]:
    import json

    return json.loads((SAMPLE / "runs" / "bm25" / "run.json").read_text())  # type: ignore[no-any-return]
