"""A corpus manifest derived from trace metadata (``store/trace_manifest.py``): partial, it proves presence only.

A small dataset without documents.jsonl and an OTLP export whose documents carry ``document.metadata`` (written by
``tests/trace_fixtures.py`` with the OpenInference attribute names), loaded through the CLI into a file store.
The spans start on 2023-11-14 (UTC): the trace run's as-of date for staleness.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.checks import check_run
from ragtriage.checks.leakage import leakage
from ragtriage.checks.staleness import stale_results
from ragtriage.classify import classify_run, unit_locations
from ragtriage.cli import app
from ragtriage.store import connect
from ragtriage.store.corpus_manifest import PARTIAL_LABEL, manifest_kind

pytest.importorskip("openinference.semconv")
pytest.importorskip("opentelemetry.proto")
from tests.trace_fixtures import Retrieval, write_otlp  # noqa: E402

pytestmark = pytest.mark.slow  # each test loads through the CLI into a file store
runner = CliRunner()
HOSTILE = '\x1b[2J\x1b]8;;http://x\x07=HYPERLINK("http://x")[bold]x[/]\u202e'
INTERN_QUERY = "salary bands for engineers"
INTERN = "trace-" + hashlib.sha256(INTERN_QUERY.encode()).hexdigest()[:16]

CASES = [
    {"id": "q1", "query": "how do I reset my password",
     "principal": {"id": "u-ann", "groups": ["staff"], "tenant": "acme"}},
    {"id": "q2", "query": "travel policy limits", "principal": {"id": "u-ann", "groups": ["staff"]}},
]  # fmt: skip
LABELS = [
    {"case_id": "q1", "document_id": "d-reset", "grade": 3},
    {"case_id": "q1", "document_id": "d-never", "grade": 3},  # relevant, never retrieved by any span
    {"case_id": "q2", "document_id": "d-travel-2024", "grade": 3},  # relevant, never retrieved
    {"case_id": "q2", "document_id": "d-travel-2023", "grade": 1},
]
META: dict[str, Any] = {
    "d-reset": {"file_path": "/kb/reset.md", "acl": ["staff"], "tenant": "acme", "updated_at": "2023-10-01T12:00:00Z"},
    "d-other": {"title": HOSTILE, "tenant": "globex", "acl": "staff", "page": 4},
    "d-travel-2023": {"allowed_groups": ["staff"], "status": "archived", "effective_to": "2023-06-30",
                      "last_modified_date": "2023-01-02"},
    "d-salary": {"acl": ["hr"]},
}  # fmt: skip


def _dataset(
    root: Path, documents: list[dict[str, Any]] | None = None, unit: str = "document", labels: list[Any] = LABELS
) -> Path:
    root.mkdir(parents=True)
    manifest = {"name": "kb", "version": "1", "unit": unit, "relevance_threshold": 2}
    (root / "dataset.json").write_text(json.dumps(manifest))
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (root / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    if documents is not None:
        (root / "documents.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    return root


def _spans(meta: dict[str, Any]) -> list[Retrieval]:
    return [
        Retrieval(CASES[0]["query"], [("d-reset", 0.9, "reset"), ("d-other", 0.5, "other")], 1, metadata=meta),
        Retrieval(CASES[1]["query"], [("d-travel-2023", 0.8, "old policy")], 2, metadata=meta),
        Retrieval(INTERN_QUERY, [("d-salary", 0.7, "bands")], 3, metadata=meta,
                  attrs={"user.id": "u-intern", "user.groups": ["all-staff"]}),
    ]  # fmt: skip


def _load(tmp_path: Path, meta: dict[str, Any], *extra: str, documents: list[dict[str, Any]] | None = None) -> Any:
    dataset = _dataset(tmp_path / "ds", documents)
    traces = write_otlp(tmp_path / "spans.jsonl", _spans(meta), per_line=1)
    db = tmp_path / "t.duckdb"
    principal = ["--principal-attribute", "user.id", "--groups-attribute", "user.groups"]
    args = ["load", "--db", str(db), "--dataset", str(dataset), "--traces", str(traces), "--run-id", "prod",
            "--no-precompute", *principal, *extra]  # fmt: skip
    return db, runner.invoke(app, args)


def _documents(con: Any) -> list[tuple[Any, ...]]:
    return con.execute(
        """SELECT document_id, unit_id, title, tenant, acl, status, CAST(effective_to AS VARCHAR),
                  CAST(updated_at AS VARCHAR) FROM documents ORDER BY document_id"""
    ).fetchall()


def test_metadata_becomes_a_partial_manifest_read_by_every_check(tmp_path: Path) -> None:
    db, res = _load(tmp_path, META)
    assert res.exit_code == 0, res.output
    assert "corpus manifest: derived from trace metadata, partial" in res.output
    assert "4 unit(s) from this load's document.metadata (4 in all)" in res.output
    con = connect(db)
    try:
        assert manifest_kind(con) == "partial"
        # by hand from META with the default keys: title <- title|file_name|file_path|source,
        # acl <- acl|allowed_groups (one string is one group), updated_at <- updated_at|...|last_modified_date
        assert _documents(con) == [
            ("d-other", "d-other", HOSTILE, "globex", ["staff"], None, None, None),
            ("d-reset", "d-reset", "/kb/reset.md", "acme", ["staff"], None, None, "2023-10-01 12:00:00"),
            ("d-salary", "d-salary", None, None, ["hr"], None, None, None),
            ("d-travel-2023", "d-travel-2023", None, None, ["staff"], "archived", "2023-06-30",
             "2023-01-02 00:00:00"),
        ]  # fmt: skip
        # relevant and never retrieved: unknown to a partial manifest, not "absent from the corpus"
        locs = {(r["case_id"], r["unit_id"]): r for r in unit_locations(con, "prod").to_pylist()}
        for key in (("q1", "d-never"), ("q2", "d-travel-2024")):
            assert locs[key]["location"] == "absent-from-runs", locs[key]
            assert locs[key]["in_corpus"] is None and locs[key]["document_in_corpus"] is None
        assert locs[("q1", "d-reset")]["in_corpus"] is True
        failures = classify_run(con, "prod", store=False).to_pylist()
        assert {r["case_id"] for r in failures} >= {"q2"}
        assert "ingestion" not in {r["category"] for r in failures}, failures
        # stale by its metadata: archived and expired before the spans' date (2023-11-14)
        stale = stale_results(con, "prod").to_pylist()
        assert [(r["case_id"], r["document_id"], r["reason"], str(r["as_of"])) for r in stale] == [
            ("q2", "d-travel-2023", "expired", "2023-11-14")
        ]
        # leakage from the metadata's acls and tenants, with the span's principal on the new case
        leaks = leakage(con, "prod").to_pylist()
        assert [(r["case_id"], r["document_id"], r["rule"]) for r in leaks] == [
            ("q1", "d-other", "tenant-mismatch"),
            (INTERN, "d-salary", "acl-no-overlap"),
        ]
        report = check_run(con, "prod")
        assert report.coverage.partial and report.coverage.checked == 3
        assert report.coverage.manifest_note is not None
    finally:
        con.close()
    out = runner.invoke(app, ["check", "--db", str(db), "--run", "prod"])
    assert out.exit_code == 1, out.output
    assert PARTIAL_LABEL in out.output
    assert "\x1b" not in out.output and "\u202e" not in out.output  # hostile title shown inert
    js = runner.invoke(app, ["check", "--db", str(db), "--run", "prod", "--format", "json"])
    assert json.loads(js.stdout)["context"]["corpus_manifest"] == "derived from trace metadata, partial"
    fails = runner.invoke(app, ["failures", "--db", str(db), "--run", "prod"])
    assert fails.exit_code == 0, fails.output
    assert PARTIAL_LABEL in fails.output


def test_the_same_lists_against_a_real_manifest_call_the_unlisted_document_an_ingestion_defect(tmp_path: Path) -> None:
    """The contrast the partial manifest exists for; and a real manifest wins: nothing is derived from metadata
    (its acls differ from the metadata's, and its rows are the ones the checks read)."""
    documents = [
        {"document_id": d, "title": f"real {d}", "acl": ["staff", "all-staff"], "tenant": "acme"}
        for d in ("d-reset", "d-other", "d-travel-2023", "d-salary", "d-never")
    ]
    db, res = _load(tmp_path, META, documents=documents)
    assert res.exit_code == 0, res.output
    assert "derived from trace metadata" not in res.output
    con = connect(db)
    try:
        assert manifest_kind(con) == "complete"
        assert [(r[0], r[2], r[4]) for r in _documents(con)] == [
            (d["document_id"], d["title"], ["staff", "all-staff"])
            for d in sorted(documents, key=lambda d: d["document_id"])
        ]
        locs = {(r["case_id"], r["unit_id"]): r["location"] for r in unit_locations(con, "prod").to_pylist()}
        assert locs[("q2", "d-travel-2024")] == "absent-from-corpus"
        assert locs[("q1", "d-never")] == "absent-from-runs"  # listed in the real manifest
        q2 = [r["category"] for r in classify_run(con, "prod", store=False).to_pylist() if r["case_id"] == "q2"]
        assert q2 == ["ingestion"]
        assert stale_results(con, "prod").num_rows == 0  # the real manifest has no dates
        assert [(r["case_id"], r["rule"]) for r in leakage(con, "prod").to_pylist()] == []
        assert not check_run(con, "prod").coverage.partial
    finally:
        con.close()


def test_metadata_serialised_twice_is_read_as_its_object(tmp_path: Path) -> None:
    """A span DataFrame or an SDK may hold ``document.metadata`` as a JSON string of the object's JSON text."""
    db, res = _load(tmp_path, {**META, "d-salary": json.dumps(json.dumps({"acl": ["hr"], "tenant": "acme"}))})
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert [r[3:5] for r in _documents(con) if r[0] == "d-salary"] == [("acme", ["hr"])]
    finally:
        con.close()


def test_phoenix_span_parquet_metadata_as_a_struct(tmp_path: Path) -> None:
    """Phoenix's ``get_spans_dataframe()`` written to Parquet: documents as a list of structs, metadata a struct."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    meta = {"acl": ["hr"], "tenant": "acme", "effective_to": "2023-01-31"}
    px = pa.table({
        "context.trace_id": ["t1"], "context.span_id": ["s1"], "parent_id": [None], "span_kind": ["RETRIEVER"],
        "start_time": pa.array([1_700_000_000_000_000], pa.timestamp("us")),
        "end_time": pa.array([1_700_000_000_030_000], pa.timestamp("us")),
        "status_code": ["OK"], "attributes.input.value": [INTERN_QUERY],
        "attributes.user.id": ["u-intern"],
        "attributes.retrieval.documents": [[{"document.id": "d-salary", "document.score": 0.7,
                                             "document.content": "bands", "document.metadata": meta}]],
    })  # fmt: skip
    pq.write_table(px, tmp_path / "spans.parquet")
    dataset = _dataset(tmp_path / "ds")
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(dataset), "--traces",
                              str(tmp_path / "spans.parquet"), "--run-id", "prod", "--no-precompute",
                              "--principal-attribute", "user.id"])  # fmt: skip
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert _documents(con) == [("d-salary", "d-salary", None, "acme", ["hr"], None, "2023-01-31", None)]
        assert [(r["case_id"], r["rule"]) for r in leakage(con, "prod").to_pylist()] == [(INTERN, "acl-no-overlap")]
        assert [r["reason"] for r in stale_results(con, "prod").to_pylist()] == ["expired"]
    finally:
        con.close()


def test_keys_named_by_option(tmp_path: Path) -> None:
    meta = {d: {"perms": m.get("acl") or m.get("allowed_groups"), "org": m.get("tenant")} for d, m in META.items()}
    db, res = _load(tmp_path, meta, "--trace-doc-meta", "acl=perms", "--trace-doc-meta", "tenant=org")
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert [(r[0], r[3], r[4]) for r in _documents(con)] == [
            ("d-other", "globex", ["staff"]),
            ("d-reset", "acme", ["staff"]),
            ("d-salary", None, ["hr"]),
            ("d-travel-2023", None, ["staff"]),
        ]
    finally:
        con.close()
    bad = runner.invoke(app, ["load", "--db", str(tmp_path / "x.duckdb"), "--dataset", str(tmp_path / "ds"),
                              "--trace-doc-meta", "colour=c"])  # fmt: skip
    assert bad.exit_code == 2 and "unknown field 'colour'" in bad.output, bad.output
    assert not (tmp_path / "x.duckdb").exists()


# LlamaIndex's OpenInference instrumentation writes a node's metadata as the JSON text of its dict: the reader's
# own keys (file_name, file_path, file_type, last_modified_date) beside what the team nests under its own keys
LLAMA: dict[str, Any] = {
    d: {"file_name": f"{d}.md", "file_path": f"/kb/{d}.md", "file_type": "text/markdown",
        "last_modified_date": "2023-10-01", "access": {"groups": m.get("acl") or m.get("allowed_groups"),
                                                       "tenant": {"id": m.get("tenant")}},
        "security.acl": ["dotted-" + g for g in (m.get("acl") or m.get("allowed_groups") or [])
                         if isinstance(m.get("acl") or m.get("allowed_groups"), list)] or None}
    for d, m in META.items()
}  # fmt: skip


def test_nested_metadata_keys_are_dotted_paths_and_a_dotted_key_is_quoted(tmp_path: Path) -> None:
    db, res = _load(tmp_path, LLAMA, "--trace-doc-meta", "acl=access.groups", "--trace-doc-meta",
                    "tenant=access.tenant.id")  # fmt: skip
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert [(r[0], r[2], r[3], r[4], r[7]) for r in _documents(con)] == [
            ("d-other", "d-other.md", "globex", ["staff"], "2023-10-01 00:00:00"),
            ("d-reset", "d-reset.md", "acme", ["staff"], "2023-10-01 00:00:00"),
            ("d-salary", "d-salary.md", None, ["hr"], "2023-10-01 00:00:00"),
            ("d-travel-2023", "d-travel-2023.md", None, ["staff"], "2023-10-01 00:00:00"),
        ]
        leaks = [(r["case_id"], r["rule"]) for r in leakage(con, "prod").to_pylist()]
        assert sorted(leaks) == [("q1", "tenant-mismatch"), (INTERN, "acl-no-overlap")]  # globex's d-other to acme
    finally:
        con.close()
    db2, res2 = _load(tmp_path / "quoted", LLAMA, "--trace-doc-meta", 'acl="security.acl"')
    assert res2.exit_code == 0, res2.output
    con = connect(db2, read_only=True)
    try:
        assert [(r[0], r[4]) for r in _documents(con)] == [
            ("d-other", None), ("d-reset", ["dotted-staff"]), ("d-salary", ["dotted-hr"]),
            ("d-travel-2023", ["dotted-staff"]),
        ]  # fmt: skip
    finally:
        con.close()
    bad = runner.invoke(app, ["load", "--db", str(tmp_path / "x.duckdb"), "--dataset", str(tmp_path / "ds"),
                              "--trace-doc-meta", 'acl="security.acl'])  # fmt: skip
    assert bad.exit_code == 2 and "unclosed quote" in bad.output, bad.output


def test_validate_refuses_the_metadata_the_load_refuses_with_the_same_finding(tmp_path: Path) -> None:
    """``validate`` on a trace export runs the load's own metadata checks, with the same ``--trace-doc-meta``."""
    meta = {**LLAMA, "d-salary": {**LLAMA["d-salary"], "access": {"groups": 42}}}
    traces = write_otlp(tmp_path / "spans.jsonl", _spans(meta), per_line=1)
    plain = runner.invoke(app, ["validate", str(traces)])
    assert plain.exit_code == 0, plain.output  # the default keys do not look under "access"
    opt = ["--trace-doc-meta", "acl=access.groups"]
    checked = runner.invoke(app, ["validate", str(traces), *opt])
    finding = f"{traces}:3: document.metadata.access.groups: '42' is not a group name or a list of group names"
    assert checked.exit_code == 2 and finding in checked.output, checked.output
    db, loaded = _load(tmp_path, meta, *opt)
    assert loaded.exit_code == 2 and finding in loaded.output, loaded.output
    assert not db.exists()


def _digest(db: Path) -> list[Any]:
    con = connect(db, read_only=True)
    try:
        tables = ("documents", "result_rows", "runs", "meta", "all_cases")
        return [con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables]
    finally:
        con.close()


@pytest.mark.parametrize(
    ("doc_meta", "field", "message"),
    [
        ("{not json", "document.metadata", "not a JSON object"),
        ({"acl": 42}, "document.metadata.acl", "is not a group name or a list of group names"),
        ({"acl": ["a", 1]}, "document.metadata.acl", "is not a group name"),
        ({"effective_to": "next tuesday"}, "document.metadata.effective_to", "is not a date"),
        ({"status": "gone"}, "document.metadata.status", "is not one of current|archived"),
        ({"tenant": {"id": "x"}}, "document.metadata.tenant", "is not a string"),
    ],
)
def test_unreadable_metadata_is_refused_with_file_line_field_and_the_store_left_as_it_was(
    tmp_path: Path, doc_meta: Any, field: str, message: str
) -> None:
    db, res = _load(tmp_path, META)
    assert res.exit_code == 0, res.output
    before = _digest(db)
    bad = write_otlp(tmp_path / "bad.jsonl", _spans({**META, "d-salary": doc_meta}), per_line=1)
    args = ["load", "--db", str(db), "--dataset", str(tmp_path / "ds"), "--traces", str(bad), "--run-id", "day2",
            "--no-precompute"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 2, out.output
    assert f"{bad}:3: {field}: " in out.output and message in out.output, out.output  # the third span's line
    assert "Traceback" not in out.output
    checked = runner.invoke(app, ["validate", str(bad)])  # the load's own checks, before any store
    assert checked.exit_code == 2 and f"{bad}:3: {field}: " in checked.output and message in checked.output
    assert _digest(db) == before
    # with a real manifest the metadata is not read: the same file loads
    real = [{"document_id": "d-reset"}]
    db2, res2 = _load(tmp_path / "real", {**META, "d-salary": doc_meta}, documents=real)
    assert res2.exit_code == 0, res2.output


def test_documents_whose_metadata_names_no_acl_are_unverifiable_not_passing(tmp_path: Path) -> None:
    # only d-salary's metadata names an acl; the others carry the fixture's {"source": <id>} alone
    db, res = _load(tmp_path, {"d-salary": {"acl": ["hr"]}})
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert [(r[0], r[2], r[4]) for r in _documents(con)] == [
            ("d-other", "d-other", None),
            ("d-reset", "d-reset", None),
            ("d-salary", None, ["hr"]),
            ("d-travel-2023", "d-travel-2023", None),
        ]
        report = check_run(con, "prod")
        assert [(r["case_id"], r["rule"]) for r in report.leakage.to_pylist()] == [(INTERN, "acl-no-overlap")]
        assert [(r["case_id"], r["rows"], r["first_units"], r["reason"]) for r in report.unverifiable.to_pylist()] == [
            ("q1", 2, "d-reset, d-other", "acl unknown"),
            ("q2", 1, "d-travel-2023", "acl unknown"),
        ]
    finally:
        con.close()
    # no acl or tenant anywhere in the metadata: leakage is NOT CHECKED, never a pass
    db2, res2 = _load(tmp_path / "none", {})
    assert res2.exit_code == 0, res2.output
    out = runner.invoke(app, ["check", "--db", str(db2), "--run", "prod"])
    assert out.exit_code == 3, out.output
    assert "NOT CHECKED: the trace metadata names no acl or tenant" in " ".join(out.output.split()), out.output


def test_chunk_unit_takes_the_document_from_the_metadata_and_leaves_unlisted_chunks_unknown(tmp_path: Path) -> None:
    """LlamaIndex nodes: the span's document id is the chunk (node), ``ref_doc_id`` its document. A relevant chunk
    of a listed document that no span returned is neither a dataset defect (its chunk id "left the snapshot")
    nor an ingestion defect: a partial manifest cannot say it is absent."""
    labels = [
        {"case_id": "q1", "document_id": "d-reset", "chunk_id": "d-reset#1", "grade": 3},
        {"case_id": "q1", "document_id": "d-reset", "chunk_id": "d-reset#2", "grade": 3},
    ]
    dataset = _dataset(tmp_path / "ds", unit="chunk", labels=labels)
    meta = {"d-reset#1": {"ref_doc_id": "d-reset", "acl": ["staff"], "file_name": "reset.md"}}
    spans = [Retrieval(CASES[0]["query"], [("d-reset#1", 0.9, "reset")], 1, metadata=meta)]
    traces = write_otlp(tmp_path / "spans.jsonl", spans, per_line=1)
    db = tmp_path / "t.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(dataset), "--traces", str(traces),
                              "--run-id", "prod", "--no-precompute"])  # fmt: skip
    assert res.exit_code == 0, res.output
    con = connect(db)
    try:
        assert con.execute("SELECT document_id, chunk_id, unit_id, title, acl FROM documents").fetchall() == [
            ("d-reset", "d-reset#1", "d-reset#1", "reset.md", ["staff"])
        ]
        locs = {r["unit_id"]: r for r in unit_locations(con, "prod").to_pylist()}
        assert locs["d-reset#1"]["location"] == "final-top-k"
        assert (locs["d-reset#2"]["location"], locs["d-reset#2"]["in_corpus"]) == ("absent-from-runs", None)
        assert locs["d-reset#2"]["document_in_corpus"] is True
        q1 = [(r["category"], r["rule"]) for r in classify_run(con, "prod", store=False).to_pylist()
              if r["case_id"] == "q1"]  # fmt: skip
        assert q1 == [("undetermined", "undetermined.not-retrieved-by-any-run")]
    finally:
        con.close()


def test_a_later_trace_run_updates_the_derived_manifest_and_the_load_counts_differing_metadata(
    tmp_path: Path,
) -> None:
    db, res = _load(tmp_path, META)
    assert res.exit_code == 0, res.output
    # day 2: d-reset's acl changed between two spans of two queries (the later line wins)
    newer = {"d-reset": {**META["d-reset"], "acl": ["staff", "ops"]}}
    spans = [_spans(META)[0], Retrieval("reset the ops password", [("d-reset", 0.9, "reset")], 9, metadata=newer)]
    day2 = write_otlp(tmp_path / "day2.jsonl", spans, per_line=1)
    args = ["load", "--db", str(db), "--dataset", str(tmp_path / "ds"), "--traces", str(day2), "--run-id", "day2",
            "--no-precompute"]  # fmt: skip
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "2 unit(s) from this load's document.metadata (4 in all); 1 of them carried differing metadata" in text
    con = connect(db, read_only=True)
    try:
        # day 1's units stay (their runs are in the store); d-reset is day 2's
        assert [(r[0], r[4]) for r in _documents(con)] == [
            ("d-other", ["staff"]),
            ("d-reset", ["staff", "ops"]),
            ("d-salary", ["hr"]),
            ("d-travel-2023", ["staff"]),
        ]
    finally:
        con.close()


def test_a_real_manifest_loaded_later_replaces_the_derived_one(tmp_path: Path) -> None:
    db, res = _load(tmp_path, META)
    assert res.exit_code == 0, res.output
    real = _dataset(tmp_path / "real", [{"document_id": "d-reset", "title": "Reset", "acl": ["staff"]}])
    out = runner.invoke(app, ["load", "--db", str(db), "--dataset", str(real), "--no-precompute"])
    assert out.exit_code == 0, out.output
    con = connect(db, read_only=True)
    try:
        assert manifest_kind(con) == "complete"
        assert [(r[0], r[2]) for r in _documents(con)] == [("d-reset", "Reset")]
    finally:
        con.close()
