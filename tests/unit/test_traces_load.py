"""``ragtriage load --traces``: retriever spans as a run, on a FILE store through the CLI.

The spans are written by ``tests/trace_fixtures.py`` (opentelemetry-proto's JSON mapping, OpenInference and OTel
GenAI attribute names from their packages) from the bundled sample's own run folders, so the figures the trace
run gives can be compared, case by case, with the run folder loaded directly.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.metrics.latency import latency_report
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.store import connect

pytest.importorskip("openinference.semconv")
pytest.importorskip("opentelemetry.proto")
from tests.trace_fixtures import Retrieval, write_otlp  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"
pytestmark = [
    pytest.mark.skipif(not (SAMPLE / "dataset").is_dir(), reason="sample_runs not generated"),
    pytest.mark.slow,  # each test loads the sample
]
runner = CliRunner()
MEASURES = ["P@5", "R@10", "nDCG@10", "RR", "AP"]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _queries() -> dict[str, str]:
    return {c["id"]: c["query"] for c in _jsonl(SAMPLE / "dataset" / "cases.jsonl")}


def _lists(run: str) -> dict[str, dict[str, list[tuple[str, float, str]]]]:
    """{stage: {case: [(chunk id, score, snippet) in rank order]}} of a sample run folder."""
    out: dict[str, dict[str, list[tuple[str, float, str]]]] = defaultdict(lambda: defaultdict(list))
    rows = sorted(_jsonl(SAMPLE / "runs" / run / "results.jsonl"), key=lambda r: (r["case_id"], r["rank"]))
    for r in rows:
        out[r.get("stage") or "final"][r["case_id"]].append((r["chunk_id"], r["score"], r.get("snippet") or ""))
    return out


def _load(db: Path, *args: str) -> str:
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(SAMPLE / "dataset"), "--no-precompute", *args])
    assert res.exit_code == 0, res.output
    return res.output


def _per_case(con: Any, run: str, stage: str = "final") -> list[dict[str, Any]]:
    rows = evaluate_run(con, run, MEASURES, stage=stage).per_case.to_pylist()
    return sorted(rows, key=lambda r: (r["case_id"], r["measure"]))


def _shared(queries: dict[str, str]) -> set[str]:
    """Cases whose query text another case shares: told apart by the case id the application puts on its span."""
    seen: dict[str, list[str]] = defaultdict(list)
    for c, q in queries.items():
        seen[" ".join(q.split())].append(c)
    return {c for cs in seen.values() if len(cs) > 1 for c in cs}


def _case_attr(case: str, shared: set[str]) -> dict[str, Any]:
    return {"metadata.case_id": case} if case in shared else {}


@pytest.mark.parametrize(("snake", "per_line"), [(False, 0), (True, 0), (False, 7), (True, 7)])
def test_otlp_spans_give_the_run_folders_metrics_per_case(tmp_path: Path, snake: bool, per_line: int) -> None:
    queries = _queries()
    final = _lists("bm25")["final"]
    shared = _shared(queries)
    # whitespace as a real request may carry it (matched after normalising)
    spans = [
        Retrieval("  " + queries[c].replace(" ", "  ") + "\n", docs, i + 1, attrs=_case_attr(c, shared))
        for i, (c, docs) in enumerate(final.items())
    ]
    path = write_otlp(tmp_path / "traces.json", spans, snake=snake, per_line=per_line)
    db = tmp_path / "t.duckdb"
    out = _load(db, "--run", str(SAMPLE / "runs" / "bm25"), "--traces", str(path), "--run-id", "bm25",
                "--run-id", "prod", "--case-id-attribute", "metadata.case_id")  # fmt: skip
    by_attr = len(shared & set(final))
    assert f"{by_attr} case(s) matched by attribute, {len(final) - by_attr} by query text" in out, out
    assert "0 new unlabelled" in out, out
    con = connect(db, read_only=True)
    try:
        theirs, ours = _per_case(con, "bm25"), _per_case(con, "prod")
        assert len(ours) == len(theirs) > 100
        assert [(r["case_id"], r["measure"]) for r in ours] == [(r["case_id"], r["measure"]) for r in theirs]
        for a, b in zip(ours, theirs, strict=True):
            assert a["value"] == pytest.approx(b["value"], abs=1e-12), (a, b)
        # one dataset version: the traces added no case
        assert con.execute("SELECT count(*) FROM datasets").fetchall()[0][0] == 1
        ev = con.execute("SELECT count(*), min(latency_ms), max(latency_ms) FROM events WHERE run_id = 'prod'")
        assert ev.fetchall()[0] == (len(final), 12.5, 12.5)
        meta = con.execute(
            """SELECT count(*), count(metadata->>'trace_id'), count(metadata->'document'->>'source'),
                      count(*) FILTER (WHERE snippet IS NULL)
               FROM results WHERE run_id = 'prod'"""
        )
        rows, with_ids, with_document, no_snippet = meta.fetchall()[0]
        assert rows == with_ids == with_document > 100 and no_snippet == 0  # every document carried metadata
    finally:
        con.close()


def test_reranker_spans_give_the_two_stages(tmp_path: Path) -> None:
    queries, lists = _queries(), _lists("hybrid-rerank")
    shared = _shared(queries)
    spans = [
        Retrieval(queries[c], lists["candidate"][c], i + 1, rerank=lists["final"].get(c, []),
                  attrs=_case_attr(c, shared))
        for i, c in enumerate(lists["candidate"])
    ]  # fmt: skip
    path = write_otlp(tmp_path / "rerank.jsonl", spans, per_line=10)
    db = tmp_path / "t.duckdb"
    _load(db, "--run", str(SAMPLE / "runs" / "hybrid-rerank"), "--traces", str(path), "--run-id", "hr",
          "--run-id", "prod", "--case-id-attribute", "metadata.case_id")  # fmt: skip
    con = connect(db, read_only=True)
    try:
        for stage in ("candidate", "final"):
            ours, theirs = _per_case(con, "prod", stage), _per_case(con, "hr", stage)
            assert len(ours) == len(theirs) > 100, stage
            for a, b in zip(ours, theirs, strict=True):
                assert (a["case_id"], a["measure"]) == (b["case_id"], b["measure"])
                assert a["value"] == pytest.approx(b["value"], abs=1e-12), (stage, a, b)
        k = con.execute("SELECT k, candidate_k FROM runs WHERE run_id = 'prod'").fetchall()[0]
        assert k[1] is not None and k[0] <= k[1]
    finally:
        con.close()


def test_unmatched_queries_become_stable_new_cases_that_pool_lists(tmp_path: Path) -> None:
    hostile = '\x1b[2J=HYPERLINK("x") [bold]who approves\u202e travel?[/]'
    spans = [
        Retrieval(
            hostile,
            [
                ("wiki-approvals#1", 0.9, "Travel approvals go to the line manager."),
                ("pol-travel-2024#07", 0.5, "Annex A"),
            ],
            1,
            latency_ms=40.0,
        ),  # fmt: skip
        Retrieval(
            hostile + "  ", [("pol-travel-2024#01", 0.7, "x")], 2, latency_ms=60.0, start_ns=1_700_000_001_000_000_000
        ),  # fmt: skip
        Retrieval("an unanswered question", [], 3, error="index timeout"),
    ]
    path = write_otlp(tmp_path / "day.json", spans)
    db = tmp_path / "t.duckdb"
    out = _load(db, "--traces", str(path), "--run-id", "prod", "--repeated", "all")
    assert "2 new unlabelled case(s); 1 repeated span(s) of a case (all)" in out, out
    con = connect(db, read_only=True)
    new = con.execute("SELECT case_id, query FROM cases WHERE starts_with(case_id, 'trace-') ORDER BY query")
    rows = new.fetchall()
    assert len(rows) == 2 and rows[0][1] == hostile  # stored verbatim: text is data
    import hashlib

    assert rows[0][0] == "trace-" + hashlib.sha256(" ".join(hostile.split()).encode()).hexdigest()[:16]
    # repeated spans: the first is the list, each span an event of its own; the failed span is an error event
    lists = con.execute(
        "SELECT case_id, count(*) FROM results WHERE run_id = 'prod' GROUP BY ALL ORDER BY 2"
    ).fetchall()
    assert lists == [(rows[0][0], 2)]
    ev = con.execute(
        "SELECT case_id, latency_ms, status, error, empty FROM events WHERE run_id = 'prod' ORDER BY latency_ms"
    ).fetchall()
    assert [(e[1], e[2], e[3], e[4]) for e in ev] == [
        (12.5, "error", "index timeout", True),
        (40.0, "ok", None, False),
        (60.0, "ok", None, False),
    ]
    assert [e[0] for e in ev[1:]] == [rows[0][0]] * 2
    assert latency_report(con, "prod").to_pylist()[0]["events"] == 3
    con.close()
    for repeated, latency in (("first", 40.0), ("last", 60.0)):  # one event per case, the chosen span's
        one = tmp_path / f"{repeated}.duckdb"
        _load(one, "--traces", str(path), "--run-id", "prod", "--repeated", repeated)
        con = connect(one, read_only=True)
        got = con.execute(f"SELECT latency_ms FROM events WHERE case_id = '{rows[0][0]}'").fetchall()
        assert got == [(latency,)], (repeated, got)
        con.close()
    res = runner.invoke(app, ["pool", "--db", str(db), "--runs", "prod", "--out", str(tmp_path / "pool.jsonl")])
    assert res.exit_code == 0, res.output
    pool = _jsonl(tmp_path / "pool.jsonl")
    mine = [p for p in pool if p["case_id"] == rows[0][0]]
    assert [p["unit_id"] for p in mine] == ["wiki-approvals#1", "pol-travel-2024#07"]
    # a unit the corpus manifest lacks is shown with the span's document.content
    assert mine[0]["text"] == "Travel approvals go to the line manager."


def test_case_id_attribute_principal_and_resource_versions(tmp_path: Path) -> None:
    spans = [
        Retrieval("whatever the user typed", [("pol-travel-2024#06", 1.0, "t")], 1,
                  attrs={"metadata.case_id": "q001", "user.id": "u-1", "user.groups": ["hr", "all-staff"]}),
        Retrieval("a new one", [("pol-travel-2024#06", 1.0, "t")], 2, attrs={"user.id": "u-2"}),
    ]  # fmt: skip
    path = write_otlp(tmp_path / "t.json", spans, resource={"service.name": "rag", "index.version": "idx-7"})
    db = tmp_path / "t.duckdb"
    out = _load(db, "--traces", str(path), "--run-id", "prod", "--case-id-attribute", "metadata.case_id",
                "--principal-attribute", "user.id", "--groups-attribute", "user.groups")  # fmt: skip
    assert "1 case(s) matched by attribute, 0 by query text" in out and "1 new" in out, out
    con = connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM results WHERE run_id = 'prod' AND case_id = 'q001'").fetchall() == [(1,)]
    p = con.execute("SELECT principal_id, principal_groups FROM cases WHERE starts_with(case_id, 'trace-')")
    assert p.fetchall() == [("u-2", None)]
    assert con.execute("SELECT index_version FROM runs WHERE run_id = 'prod'").fetchall() == [("idx-7",)]
    con.close()


def test_genai_spans_phoenix_parquet_and_langfuse_observations(tmp_path: Path) -> None:
    q = _queries()
    docs = [("pol-travel-2024#06", 0.9, "a"), ("pol-travel-2024#07", 0.4, "b")]
    genai = write_otlp(tmp_path / "genai.json", [Retrieval(q["q001"], docs, 1, genai=True)])
    # Phoenix get_spans_dataframe() columns, documents as a list of structs
    px = pa.table({
        "context.trace_id": ["t2"], "context.span_id": ["s2"], "parent_id": [None], "span_kind": ["RETRIEVER"],
        "start_time": pa.array([1_700_000_000_000_000], pa.timestamp("us")),
        "end_time": pa.array([1_700_000_000_030_000], pa.timestamp("us")),
        "status_code": ["OK"], "attributes.input.value": [q["q002"]],
        "attributes.retrieval.documents": [[{"document.id": d, "document.score": s, "document.content": c}
                                            for d, s, c in docs]],
    })  # fmt: skip
    pq.write_table(px, tmp_path / "spans.parquet")
    obs = [
        {"id": "o1", "traceId": "t3", "type": "SPAN", "name": "retrieve", "startTime": "2025-01-01T00:00:00.000Z",
         "endTime": "2025-01-01T00:00:00.250Z", "input": {"question": q["q003"]},
         "output": {"hits": [{"doc": {"key": d}, "relevance": s} for d, s, _ in docs]}},
        {"id": "o2", "traceId": "t3", "type": "GENERATION", "name": "llm", "input": "x", "output": "y"},
    ]  # fmt: skip
    lf = tmp_path / "observations.jsonl"
    lf.write_text("".join(json.dumps(o) + "\n" for o in obs))
    db = tmp_path / "t.duckdb"
    for path, run, extra in [
        (genai, "genai", []),
        (tmp_path / "spans.parquet", "phoenix", []),
        (lf, "langfuse", ["--trace-query", "input.question", "--trace-docs", "output.hits",
                          "--trace-doc-id", "doc.key", "--trace-score", "relevance"]),
    ]:  # fmt: skip
        _load(db, "--traces", str(path), "--run-id", run, *extra)
    con = connect(db, read_only=True)
    got = con.execute(
        "SELECT run_id, case_id, list(chunk_id ORDER BY rank), list(score ORDER BY rank) FROM results GROUP BY ALL "
        "ORDER BY 1"
    ).fetchall()
    ids, scores = [d for d, _, _ in docs], [s for _, s, _ in docs]
    assert got == [("genai", "q001", ids, scores), ("langfuse", "q003", ids, scores), ("phoenix", "q002", ids, scores)]
    lat = con.execute("SELECT run_id, latency_ms FROM events ORDER BY 1").fetchall()
    assert lat == [("genai", 12.5), ("langfuse", 250.0), ("phoenix", 30.0)]
    # documents without metadata: the span's ids once per list, at rank 1
    meta = con.execute("SELECT run_id, rank, metadata FROM results ORDER BY 1, 2").fetchall()
    assert [(r, k, m is None) for r, k, m in meta] == [
        (run, k, k == 2) for run in ("genai", "langfuse", "phoenix") for k in (1, 2)
    ]
    assert json.loads(meta[2][2]) == {"trace_id": "t3", "span_id": "o1", "document": None}
    con.close()


def test_a_malformed_span_names_file_line_and_field_and_leaves_the_store(tmp_path: Path) -> None:
    db = tmp_path / "t.duckdb"
    _load(db)
    before = connect(db, read_only=True)
    counts = before.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM all_cases)").fetchall()
    before.close()
    path = write_otlp(tmp_path / "bad.jsonl", [Retrieval("q", [("", 0.5, "x"), ("d", float("nan"), "y")], 1),
                                               Retrieval("r", [("d", 1.0, "z")], 2)], per_line=1)  # fmt: skip
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(SAMPLE / "dataset"), "--traces", str(path),
                              "--run-id", "prod"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert f"{path}:1: document.id: a document without an id" in res.output, res.output
    assert f"{path}:1: document.score: a document score that is not a finite number: 'NaN'" in res.output
    assert "Traceback" not in res.output
    cut = tmp_path / "cut.json"
    cut.write_text(path.read_text().splitlines()[1][:-40])
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(SAMPLE / "dataset"), "--traces", str(cut),
                              "--run-id", "prod"])  # fmt: skip
    assert res.exit_code == 2 and f"{cut}:1: " in res.output and "cut short" in res.output, res.output
    two = tmp_path / "two.jsonl"  # one request per line, the second not JSON: named by its line
    two.write_text(path.read_text().splitlines()[1] + "\n" + '{"resourceSpans": [\n')
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(SAMPLE / "dataset"), "--traces", str(two),
                              "--run-id", "prod"])  # fmt: skip
    assert res.exit_code == 2 and f"{two}:2: not a JSON object" in res.output, res.output
    after = connect(db, read_only=True)
    assert after.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM all_cases)").fetchall() == counts
    after.close()


def test_two_days_of_traces_compare(tmp_path: Path) -> None:
    queries, lists = _queries(), _lists("bm25")["final"]
    dense = _lists("dense")["final"]
    shared = _shared(queries)
    db = tmp_path / "t.duckdb"
    for day, source in (("mon", lists), ("tue", dense)):
        spans = [
            Retrieval(queries[c], docs, i + 1, attrs=_case_attr(c, shared))
            for i, (c, docs) in enumerate(source.items())
        ]  # noqa: E501
        path = write_otlp(tmp_path / f"{day}.jsonl", spans, per_line=50)
        _load(db, "--traces", str(path), "--run-id", day, "--case-id-attribute", "metadata.case_id")
    res = runner.invoke(app, ["compare", "--db", str(db), "--baseline", "mon", "--run", "tue", "--format", "json"])
    assert res.exit_code in (0, 1), res.output
    row = next(r for r in json.loads(res.stdout)["rows"] if r["slice"] == "all" and r["metric"] == "nDCG@10")
    # the figures `compare --baseline bm25 --run dense` gives on the sample's run folders
    assert row["n"] == 138
    assert row["baseline"] == pytest.approx(0.681289505755307, abs=1e-12)
    assert row["candidate"] == pytest.approx(0.6825311159747011, abs=1e-12)


def test_a_trace_that_leaks_is_reported_by_check(tmp_path: Path) -> None:
    secret = ("pol-compensation-2024#01", 0.9, "salary bands")  # acl hr-confidential in the sample's manifest
    spans = [
        Retrieval("what are the salary bands for engineers?", [secret], 1,
                  attrs={"user.id": "u-intern", "user.groups": ["all-staff"], "user.tenant": "halvorsen"}),
        Retrieval("salary bands for my team", [secret], 2,
                  attrs={"user.id": "u-hr", "user.groups": ["hr-confidential"], "user.tenant": "halvorsen"}),
    ]  # fmt: skip
    path = write_otlp(tmp_path / "t.jsonl", spans, per_line=1)
    db = tmp_path / "t.duckdb"
    _load(db, "--traces", str(path), "--run-id", "prod", "--principal-attribute", "user.id",
          "--groups-attribute", "user.groups")  # fmt: skip
    res = runner.invoke(app, ["check", "--db", str(db), "--run", "prod", "--format", "json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["context"]["verdict"].startswith("FAILED: leakage"), doc["context"]
    leaks = [r for r in doc["rows"] if r["check"] == "leakage"]
    intern = "trace-" + hashlib.sha256(b"what are the salary bands for engineers?").hexdigest()[:16]
    # the intern's span leaked; the HR member's span, with the same document, did not
    assert [(r["case_id"], r["chunk_id"], r["rule"]) for r in leaks] == [
        (intern, "pol-compensation-2024#01", "acl-no-overlap")
    ]


def test_phoenix_span_dataframe_in_memory_loads_as_its_parquet_does(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    from ragtriage import load_store
    from ragtriage.store.byo import LoadRequest

    q = _queries()
    docs = [{"document.id": "pol-travel-2024#06", "document.score": 0.9, "document.content": "=cmd|' /C calc'!A0"},
            {"document.id": "pol-travel-2024#07", "document.score": 0.4, "document.content": "\x1b[2J"}]  # fmt: skip
    start = pd.Timestamp("2025-03-01T10:00:00", tz="UTC")
    # the shape px.Client().get_spans_dataframe() returns: indexed by span id, timestamps with a zone
    df = pd.DataFrame(
        {
            "context.span_id": ["s1", "s2", "s3"],
            "context.trace_id": ["t1", "t1", "t2"],
            "parent_id": [None, "s1", None],
            "span_kind": ["CHAIN", "RETRIEVER", "RETRIEVER"],
            "start_time": [start, start, start + pd.Timedelta(seconds=1)],
            "end_time": [start, start + pd.Timedelta(milliseconds=42), start + pd.Timedelta(seconds=2)],
            "status_code": ["OK", "OK", "ERROR"],
            "status_message": ["", "", "index down"],
            "attributes.input.value": ["hi", q["q001"], q["q002"]],
            "attributes.retrieval.documents": [None, docs, []],
        }
    ).set_index("context.span_id")
    df.to_parquet(tmp_path / "spans.parquet")
    figures = []
    for name, source in (("frame", df), ("file", tmp_path / "spans.parquet")):
        db = tmp_path / f"{name}.duckdb"
        req = LoadRequest(dataset=SAMPLE / "dataset", traces=[source], trace_run_id="px")
        load_store(db, req, precompute=False)
        con = connect(db, read_only=True)
        figures.append(
            (
                con.execute("SELECT case_id, rank, chunk_id, score, snippet FROM results ORDER BY ALL").fetchall(),
                con.execute("SELECT case_id, latency_ms, status, error, empty FROM events ORDER BY ALL").fetchall(),
            )
        )
        con.close()
    assert figures[0] == figures[1]
    results, events = figures[0]
    assert [(r[0], r[2], r[4]) for r in results] == [("q001", d["document.id"], d["document.content"]) for d in docs]
    assert events == [("q001", 42.0, "ok", None, False), ("q002", 1000.0, "error", "index down", True)]
