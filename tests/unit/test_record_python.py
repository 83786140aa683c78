"""`ragtriage record` over Python retrievers: sync and async callables, LangChain- and LlamaIndex-shaped objects,
two stages, timeouts, errors, repeats, warm-up, rate limit, and the run folder they produce."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ragtriage.record import RecordError, record_run
from ragtriage.record.python_adapter import PythonRetriever, load_target
from ragtriage.record.stages import TwoStageRetriever
from ragtriage.store import connect, load_dataset, load_run
from tests.record_helpers import plan, python_retriever, rows, without_latency, write_dataset


def ranked(query: str) -> list[dict[str, Any]]:
    i = int(query.split()[-1])
    return [
        {"document_id": f"d{i}", "chunk_id": f"d{i}#1", "score": 2.0},
        {"document_id": f"d{i + 1}", "chunk_id": f"d{i + 1}#1", "score": 1.0},
    ]


def test_sync_callable_gets_the_case_principal_and_filters(tmp_path: Path) -> None:
    seen: dict[str, tuple[Any, Any, int]] = {}

    def search(query: str, k: int, principal: Any, filters: Any, case_id: str) -> dict[str, Any]:
        seen[case_id] = (principal, filters, k)
        return {"hits": ranked(query), "versions": {"index_version": "idx-3", "reranker_build": 7}}

    ds = write_dataset(tmp_path / "ds", n=6)
    result = record_run(plan(ds, tmp_path / "run"), python_retriever(search))
    assert result.complete and result.outcome.recorded == 6
    assert seen["q03"] == ({"id": "u3", "groups": ["g"]}, {"language": "de"}, 3)
    assert seen["q01"][1] is None
    res = rows(tmp_path / "run" / "results.jsonl")
    assert res[:2] == [
        {"case_id": "q01", "stage": "final", "rank": 1, "document_id": "d1", "chunk_id": "d1#1", "score": 2.0},
        {"case_id": "q01", "stage": "final", "rank": 2, "document_id": "d2", "chunk_id": "d2#1", "score": 1.0},
    ]
    events = rows(tmp_path / "run" / "events.jsonl")
    assert [e["case_id"] for e in events] == [f"q{i:02d}" for i in range(1, 7)]
    assert all(e["status"] == "ok" and e["concurrency"] == 4 and e["latency_ms"] >= 0 for e in events)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert (manifest["run_id"], manifest["k"], manifest["concurrency"], manifest["incomplete"]) == ("run", 3, 4, False)
    assert manifest["dataset_version"] == "v1"
    assert (manifest["index_version"], manifest["system"]) == ("idx-3", {"reranker_build": "7"})
    assert manifest["record"]["retriever"] == {
        "kind": "python",
        "target": "tests:obj",
        "interface": "callable",
        "async": False,
        "response": {},
    }
    # It loads with the ordinary loader, unchanged.
    con = connect(tmp_path / "t.duckdb")
    load_dataset(con, ds)
    report = load_run(con, tmp_path / "run")
    assert report.rows["results"] == 12 and report.rows["events"] == 6


def test_async_callable_returning_tuples_runs_at_the_stated_concurrency(tmp_path: Path) -> None:
    live, peak = 0, 0

    async def search(query: str) -> list[tuple[str, str, float]]:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        await asyncio.sleep(0.02)
        live -= 1
        i = int(query.split()[-1])
        return [(f"d{i}", f"d{i}#1", 1.5)]

    ds = write_dataset(tmp_path / "ds", n=12)
    r = python_retriever(search)
    assert r.is_async
    record_run(plan(ds, tmp_path / "run", concurrency=3), r)
    assert peak == 3
    assert rows(tmp_path / "run" / "results.jsonl")[-1] == {
        "case_id": "q12",
        "stage": "final",
        "rank": 1,
        "document_id": "d12",
        "chunk_id": "d12#1",
        "score": 1.5,
    }


def test_errors_timeouts_and_empty_results_become_events(tmp_path: Path) -> None:
    def search(query: str) -> list[dict[str, Any]]:
        i = int(query.split()[-1])
        if i == 2:
            raise ConnectionResetError("backend went away")
        if i == 3:
            time.sleep(3)  # past --timeout: abandoned on its daemon thread
        if i == 4:
            return []
        return ranked(query)

    ds = write_dataset(tmp_path / "ds", n=5)
    t0 = time.perf_counter()
    out = record_run(plan(ds, tmp_path / "run", timeout_s=0.3), python_retriever(search))
    assert time.perf_counter() - t0 < 2.5  # never waited for the hung call
    ev = {e["case_id"]: e for e in rows(tmp_path / "run" / "events.jsonl")}
    assert ev["q02"]["status"] == "error" and ev["q02"]["error"] == "ConnectionResetError: backend went away"
    assert ev["q03"]["timed_out"] is True and ev["q03"]["error"] == "timed out after 0.3 s"
    assert ev["q03"]["latency_ms"] >= 300
    assert (ev["q04"]["empty"], ev["q04"]["status"], ev["q04"]["error"]) == (True, "ok", None)
    assert (ev["q05"]["empty"], ev["q05"]["timed_out"]) == (False, False)
    assert (out.outcome.errors, out.outcome.timeouts) == (2, 1)
    assert {r["case_id"] for r in rows(tmp_path / "run" / "results.jsonl")} == {"q01", "q05"}


class FakeLangChainRetriever:
    """Shaped like langchain_core's BaseRetriever: ainvoke(query) -> Documents with metadata."""

    def __init__(self) -> None:
        self.calls = 0

    def invoke(self, query: str) -> list[Any]:
        raise AssertionError("the async interface is preferred")

    async def ainvoke(self, query: str) -> list[Any]:
        self.calls += 1
        i = int(query.split()[-1])
        return [
            SimpleNamespace(
                id=f"d{i}#1",
                page_content=f"passage {i}",
                metadata={"source": f"d{i}", "relevance_score": 0.9, "title": "T"},
            )
        ]


def test_langchain_shaped_object(tmp_path: Path) -> None:
    fake = FakeLangChainRetriever()
    r = python_retriever(fake)
    assert (r.interface, r.is_async) == ("langchain", True)
    ds = write_dataset(tmp_path / "ds", n=4)
    record_run(plan(ds, tmp_path / "run", warmup=2), r)
    assert fake.calls == 2 + 4  # two warm-up requests (the pre-flight one first), then one per case
    assert rows(tmp_path / "run" / "results.jsonl")[0] == {
        "case_id": "q01",
        "stage": "final",
        "rank": 1,
        "document_id": "d1",
        "chunk_id": "d1#1",
        "score": 0.9,
        "snippet": "passage 1",
        "metadata": {"source": "d1", "relevance_score": 0.9, "title": "T"},
    }


class FakeLlamaIndexRetriever:
    """Shaped like llama_index's BaseRetriever: retrieve(query) -> NodeWithScore."""

    def retrieve(self, query: str) -> list[Any]:
        i = int(query.split()[-1])
        node = SimpleNamespace(node_id=f"d{i}#1", ref_doc_id=f"d{i}", text="t", metadata={})
        return [SimpleNamespace(node=node, score=0.25)]


def test_llamaindex_shaped_object_and_two_stages(tmp_path: Path) -> None:
    def first_stage(query: str) -> list[tuple[str, str, float]]:
        i = int(query.split()[-1])
        return [(f"d{j}", f"d{j}#1", 1.0 / j) for j in range(i, i + 4)]

    final = python_retriever(FakeLlamaIndexRetriever())
    assert (final.interface, final.is_async) == ("llamaindex", False)
    ds = write_dataset(tmp_path / "ds", n=3)
    result = record_run(
        plan(ds, tmp_path / "run", candidate_k=3), TwoStageRetriever(final, python_retriever(first_stage))
    )
    res = rows(tmp_path / "run" / "results.jsonl")
    q2 = [(r["stage"], r["rank"], r["chunk_id"]) for r in res if r["case_id"] == "q02"]
    assert q2 == [("candidate", 1, "d2#1"), ("candidate", 2, "d3#1"), ("candidate", 3, "d4#1"), ("final", 1, "d2#1")]
    assert result.manifest["candidate_k"] == 3
    assert result.manifest["record"]["retriever"]["kind"] == "two-stage"


def test_repeat_gives_percentiles_and_results_from_the_first_answer(tmp_path: Path) -> None:
    calls: list[str] = []

    def search(query: str, case_id: str) -> list[dict[str, Any]]:
        calls.append(case_id)
        return ranked(query)

    ds = write_dataset(tmp_path / "ds", n=4)
    result = record_run(plan(ds, tmp_path / "run", repeat=3), python_retriever(search))
    assert len(calls) == 1 + 4 * 3
    lat = result.manifest["record"]["latency"]
    assert lat["requests"] == 12 and lat["p50_ms"] <= lat["p95_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    events = rows(tmp_path / "run" / "events.jsonl")
    assert all(len(e["latency_ms_runs"]) == 3 for e in events)
    assert events[0]["latency_ms"] == sorted(events[0]["latency_ms_runs"])[1]  # the median of three
    assert len(rows(tmp_path / "run" / "results.jsonl")) == 8


def test_rate_limit_spaces_request_starts(tmp_path: Path) -> None:
    starts: list[float] = []

    async def search(query: str) -> list[dict[str, Any]]:
        starts.append(time.perf_counter())
        return ranked(query)

    ds = write_dataset(tmp_path / "ds", n=6)
    record_run(plan(ds, tmp_path / "run", concurrency=6, rate_per_s=20.0), python_retriever(search))
    cases = sorted(starts[1:])  # starts[0] is the pre-flight request, which is not rate-limited
    # The n-th start is never earlier than n slots of 1 / 20 s after the first (less 10 ms of clock slack).
    assert len(cases) == 6 and all(t - cases[0] >= n * 0.05 - 0.01 for n, t in enumerate(cases))


def stopping_search(stop: threading.Event, after: int) -> Any:
    count = [0]

    def search(query: str) -> list[dict[str, Any]]:
        count[0] += 1
        if count[0] > after:
            stop.set()
        return ranked(query)

    return search


def test_interrupted_then_resumed_equals_uninterrupted(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", n=20)
    whole = tmp_path / "whole"
    record_run(plan(ds, whole, run_id="r", concurrency=3), python_retriever(ranked))
    part = tmp_path / "part"
    stop = threading.Event()
    first = record_run(plan(ds, part, run_id="r", concurrency=3), python_retriever(stopping_search(stop, 8)), stop=stop)
    assert not first.complete and 0 < first.outcome.recorded < 20
    manifest = json.loads((part / "run.json").read_text())
    assert manifest["incomplete"] is True and manifest["record"]["cases_recorded"] == first.outcome.recorded
    con = connect(tmp_path / "t.duckdb")  # the partial run is a valid run
    load_dataset(con, ds)
    report = load_run(con, part)
    assert report.rows["events"] == first.outcome.recorded
    incomplete = [w for w in report.warnings if w.code == "incomplete-run"]
    assert len(incomplete) == 1 and f"({first.outcome.recorded} of 20 cases)" in str(incomplete[0])
    with (part / ".record-journal.jsonl").open("a") as fh:
        fh.write('{"case_id": "q19", "torn')  # a crash mid-line: dropped, the case is asked again
    second = record_run(plan(ds, part, run_id="r", concurrency=3, resume=True), python_retriever(ranked))
    assert second.complete and second.outcome.recorded == 20
    assert (part / "results.jsonl").read_bytes() == (whole / "results.jsonl").read_bytes()
    assert without_latency(rows(part / "events.jsonl")) == without_latency(rows(whole / "events.jsonl"))
    assert not (part / ".record-journal.jsonl").exists()
    assert json.loads((part / "run.json").read_text())["created_at"] == manifest["created_at"]
    with pytest.raises(RecordError, match="it is complete"):
        record_run(plan(ds, part, run_id="r", resume=True), python_retriever(ranked))


def test_resume_refuses_other_settings_and_out_is_never_overwritten_silently(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", n=10)
    stop = threading.Event()
    record_run(plan(ds, tmp_path / "run"), python_retriever(stopping_search(stop, 8)), stop=stop)
    with pytest.raises(RecordError, match="settings differ from the interrupted recording: k"):
        record_run(plan(ds, tmp_path / "run", k=5, resume=True), python_retriever(ranked))
    with pytest.raises(RecordError, match="already holds a run"):
        record_run(plan(ds, tmp_path / "run"), python_retriever(ranked))
    assert record_run(plan(ds, tmp_path / "run", force=True), python_retriever(ranked)).complete


def test_a_failing_first_call_stops_before_anything_is_written(tmp_path: Path) -> None:
    def broken(query: str) -> list[Any]:
        raise ValueError("index not loaded")

    ds = write_dataset(tmp_path / "ds", n=3)
    with pytest.raises(RecordError, match="the first call failed: ValueError: index not loaded"):
        record_run(plan(ds, tmp_path / "run"), python_retriever(broken))
    assert not (tmp_path / "run").exists()


def test_load_target_errors(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="cannot import no_such_module_xyz"):
        load_target("no_such_module_xyz:f")
    with pytest.raises(RecordError, match="has no attribute 'nope'"):
        load_target("json:nope")
    with pytest.raises(RecordError, match="python:module:function"):
        load_target("json")
    mod = tmp_path / "needs_lc.py"
    mod.write_text("import langchain_core_missing_for_test\n")
    with pytest.raises(RecordError, match=r"pip install 'ragtriage\[langchain\]'"):
        load_target(f"{mod}:retriever")
    ok = tmp_path / "my_search.py"
    ok.write_text("def retrieve(query, k):\n    return [(query, 1.0)] * k\n")
    assert PythonRetriever(f"{ok}:retrieve", python_retriever(ranked).shape).interface == "callable"
    needs = tmp_path / "needs_more.py"
    needs.write_text("def retrieve(query, index):\n    return []\n")
    with pytest.raises(RecordError, match="needs argument\\(s\\) index"):
        PythonRetriever(f"{needs}:retrieve", python_retriever(ranked).shape)


def test_stopped_before_the_first_case_writes_nothing(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    ds = write_dataset(tmp_path / "ds", n=3)
    result = record_run(plan(ds, tmp_path / "run"), python_retriever(ranked), stop=stop)
    assert not result.complete and result.outcome.recorded == 0
    assert not (tmp_path / "run").exists()
