"""Every validation error the loader promises, with its message, and atomicity of failing loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtriage.contract.errors import ValidationFailed
from ragtriage.store import connect, load_dataset, load_run
from tests.factory import write_dataset, write_jsonl, write_run

CASES = [
    {"id": "q1", "query": "reset password"},
    {"id": "q2", "query": "vpn setup"},
    {"id": "n1", "query": "who is the CEO of Mars", "answerable": False, "expected_behavior": "empty"},
]
LABELS = [
    {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3},
    {"case_id": "q2", "document_id": "d2", "chunk_id": "d2#1", "grade": 2},
]
DOCS = [
    {"document_id": "d1", "chunk_id": "d1#1", "acl": ["all"], "text": "Reset your password in the portal."},
    {"document_id": "d1", "chunk_id": "d1#2", "acl": ["all"]},
    {"document_id": "d2", "chunk_id": "d2#1", "acl": ["all"]},
]


def _errors(exc: pytest.ExceptionInfo[ValidationFailed]) -> list[str]:
    return [str(e) for e in exc.value.errors]


def _good_dataset(tmp_path: Path, **over: object) -> Path:
    kw: dict[str, object] = {"cases": CASES, "labels": LABELS, "documents": DOCS}
    kw.update(over)
    return write_dataset(tmp_path / "ds", **kw)  # type: ignore[arg-type]


def _load_bad_dataset(tmp_path: Path, **over: object) -> list[str]:
    con = connect(tmp_path / "s.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_dataset(con, _good_dataset(tmp_path, **over))
    return _errors(exc)


def test_missing_required_field(tmp_path: Path) -> None:
    errs = _load_bad_dataset(tmp_path, cases=[{"id": "q1"}, *CASES[1:]])
    assert errs == [f"{tmp_path}/ds/cases.jsonl:1: query: missing required field 'query'"] + [e for e in errs[1:]]
    assert any("labels.jsonl:1: case_id: unknown case id q1" in e for e in errs) is False


def test_wrong_type_and_grade_outside_scale(tmp_path: Path) -> None:
    labels = [
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": "high"},
        {"case_id": "q2", "document_id": "d2", "chunk_id": "d2#1", "grade": 5},
    ]
    errs = _load_bad_dataset(tmp_path, labels=labels)
    assert f"{tmp_path}/ds/labels.jsonl:1: grade: wrong type: expected an integer" in errs
    assert f"{tmp_path}/ds/labels.jsonl:2: grade: grade 5 is outside the scale 0..3" in errs


def test_unknown_case_in_labels_and_unanswerable_without_behavior(tmp_path: Path) -> None:
    cases = [*CASES[:2], {"id": "n1", "query": "x", "answerable": False}]
    labels = [*LABELS, {"case_id": "zz", "document_id": "d1", "chunk_id": "d1#1", "grade": 1}]
    errs = _load_bad_dataset(tmp_path, cases=cases, labels=labels)
    assert f"{tmp_path}/ds/labels.jsonl:3: case_id: unknown case id zz" in errs
    assert any(
        e.startswith(f"{tmp_path}/ds/cases.jsonl:3: expected_behavior: expected_behavior is required") for e in errs
    )


def test_malformed_json_line_and_empty_file(tmp_path: Path) -> None:
    ds = _good_dataset(tmp_path)
    (ds / "cases.jsonl").write_text('{"id": "q1", "query": "a"}\n{"id": "q2", \n', encoding="utf-8")
    (ds / "labels.jsonl").write_text("", encoding="utf-8")
    con = connect(tmp_path / "s.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_dataset(con, ds)
    errs = _errors(exc)
    assert f'{ds}/cases.jsonl:2: malformed JSON: \'{{"id": "q2", \'' in errs
    assert f"{ds}/labels.jsonl: file is empty" in errs


def test_utf16_bom_is_an_error_and_utf8_bom_a_warning(tmp_path: Path) -> None:
    ds = _good_dataset(tmp_path)
    raw = "".join(json.dumps(c) + "\n" for c in CASES)
    (ds / "cases.jsonl").write_bytes(raw.encode("utf-16"))
    con = connect(tmp_path / "s.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_dataset(con, ds)
    assert _errors(exc) == [f"{ds}/cases.jsonl:1: file is UTF-16 (byte-order mark found); save it as UTF-8"]
    (ds / "cases.jsonl").write_bytes(b"\xef\xbb\xbf" + raw.encode())
    rep = load_dataset(con, ds)
    assert [w.code for w in rep.warnings] == ["bom"]
    assert con.execute("SELECT count(*) FROM cases").fetchone() == (3,)


def test_unknown_unit(tmp_path: Path) -> None:
    ds = _good_dataset(tmp_path)
    (ds / "dataset.json").write_text(json.dumps({"name": "x", "version": "1", "unit": "paragraph"}))
    con = connect(tmp_path / "s.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_dataset(con, ds)
    assert _errors(exc) == [f"{ds}/dataset.json:1: unit: unknown unit 'paragraph'; use chunk|document|span"]


def _store(tmp_path: Path):  # type: ignore[no-untyped-def]
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, _good_dataset(tmp_path))
    return con


def _bad_run(
    tmp_path: Path, results: list[dict[str, object]], events: list[dict[str, object]] | None = None
) -> list[str]:
    con = _store(tmp_path)
    before = con.execute("SELECT (SELECT count(*) FROM results), (SELECT count(*) FROM runs)").fetchone()
    with pytest.raises(ValidationFailed) as exc:
        load_run(con, write_run(tmp_path / "run", {"run_id": "r", "k": 5}, results, events))  # type: ignore[arg-type]
    assert con.execute("SELECT (SELECT count(*) FROM results), (SELECT count(*) FROM runs)").fetchone() == before
    return _errors(exc)


def test_run_rank_below_one_duplicate_rank_nan_score_unknown_case(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text(
        '{"case_id": "q1", "rank": 0, "document_id": "d1", "chunk_id": "d1#1", "score": 1.0}\n'
        '{"case_id": "q1", "rank": 2, "document_id": "d1", "chunk_id": "d1#2", "score": NaN}\n'
        '{"case_id": "q1", "rank": 2, "document_id": "d2", "chunk_id": "d2#1", "score": 0.5}\n'
        '{"case_id": "q7", "rank": 1, "document_id": "d2", "chunk_id": "d2#1", "score": 0.5}\n',
        encoding="utf-8",
    )
    (run / "run.json").write_text(json.dumps({"run_id": "r", "k": 5}))
    con = _store(tmp_path)
    with pytest.raises(ValidationFailed) as exc:
        load_run(con, run)
    errs = _errors(exc)
    assert f"{run}/results.jsonl:1: rank: rank 0 is below 1" in errs
    assert f"{run}/results.jsonl:2: score: score nan is not a finite number" in errs
    assert f"{run}/results.jsonl:3: rank: duplicate (case_id, stage, rank) q1 / final / 2" in errs
    # q7 is not a case: its rows are left out with a warning (as trec_eval), not an error
    assert not any("q7" in e for e in errs)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_unknown_case_in_events_and_bad_status(tmp_path: Path) -> None:
    results = [{"case_id": "q1", "rank": 1, "document_id": "d1", "chunk_id": "d1#1", "score": 1.0}]
    errs = _bad_run(tmp_path, results, [{"case_id": "q1", "status": "weird"}, {"case_id": "q8", "latency_ms": 3}])
    assert f"{tmp_path}/run/events.jsonl:1: status: value weird is not one of ok|insufficient_evidence|error" in errs
    assert f"{tmp_path}/run/events.jsonl:2: case_id: unknown case id q8" in errs


def test_warnings_are_counted_not_fatal(tmp_path: Path) -> None:
    labels = [*LABELS, {"case_id": "q1", "document_id": "gone", "chunk_id": "gone#1", "grade": 2}]
    docs = [*DOCS, {"document_id": "d3", "chunk_id": "d3#1"}]
    con = connect(tmp_path / "s.duckdb")
    rep = load_dataset(con, _good_dataset(tmp_path, labels=labels, documents=docs))
    assert sorted(w.code for w in rep.warnings) == ["label-unit-not-in-snapshot", "no-acl"]
    results = [
        {"case_id": "q1", "rank": 1, "document_id": "d9", "chunk_id": "d9#1", "score": 1.0},
        {"case_id": "q1", "rank": 2, "document_id": "d1", "chunk_id": "d1#1", "score": 0.9},
        {"case_id": "q1", "rank": 3, "document_id": "d1", "chunk_id": "d1#1", "score": 0.8},
    ]
    rep = load_run(con, write_run(tmp_path / "run", {"run_id": "r", "k": 5}, results, None))
    assert sorted(w.code for w in rep.warnings) == ["duplicate-in-list", "result-unit-not-in-corpus"]
    n = con.execute("SELECT count(*) FROM load_warnings").fetchone()
    assert n == (4,)


@pytest.mark.slow
def test_failing_load_leaves_every_table_unchanged(tmp_path: Path) -> None:
    con = _store(tmp_path)
    good = [{"case_id": "q1", "rank": 1, "document_id": "d1", "chunk_id": "d1#1", "score": 1.0}]
    load_run(con, write_run(tmp_path / "r1", {"run_id": "r1", "k": 5}, good, None))
    tables = ["all_cases", "all_labels", "documents", "runs", "results", "events", "loads", "load_warnings", "datasets"]

    def counts() -> list[int]:
        return [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables]  # type: ignore[index]

    before = counts()
    bad_ds = write_dataset(tmp_path / "bad", cases=CASES, labels=[{"case_id": "q1", "document_id": "d1", "grade": 9}])
    with pytest.raises(ValidationFailed):
        load_dataset(con, bad_ds)
    with pytest.raises(ValidationFailed):
        load_run(con, write_run(tmp_path / "r2", {"run_id": "r2", "k": 5}, [{**good[0], "rank": -1}], None))
    with pytest.raises(ValidationFailed, match="already loaded; pass --replace"):
        load_run(con, write_run(tmp_path / "r1b", {"run_id": "r1", "k": 5}, good, None))
    assert counts() == before


def test_replace_swaps_the_run(tmp_path: Path) -> None:
    con = _store(tmp_path)
    one = [{"case_id": "q1", "rank": 1, "document_id": "d1", "chunk_id": "d1#1", "score": 1.0}]
    two = [*one, {"case_id": "q2", "rank": 1, "document_id": "d2", "chunk_id": "d2#1", "score": 1.0}]
    load_run(con, write_run(tmp_path / "a", {"run_id": "r", "k": 5}, one, None))
    load_run(con, write_run(tmp_path / "b", {"run_id": "r", "k": 5}, two, None), replace=True)
    assert con.execute("SELECT count(*) FROM results WHERE run_id = 'r'").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_reloading_identical_dataset_is_a_no_op(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    first = load_dataset(con, _good_dataset(tmp_path))
    second = load_dataset(con, _good_dataset(tmp_path))
    assert first.target == second.target and second.unchanged
    assert con.execute("SELECT count(*) FROM all_cases").fetchone() == (3,)


def test_csv_labels_with_lists_and_parquet_documents(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ds = tmp_path / "ds"
    write_dataset(ds, cases=CASES, labels=LABELS)
    (ds / "labels.jsonl").unlink()
    (ds / "labels.csv").write_text("case_id,document_id,chunk_id,grade,annotator\nq1,d1,d1#1,3,\nq2,d2,d2#1,2,bob\n")
    (ds / "cases.jsonl").unlink()
    (ds / "cases.csv").write_text(
        'id,query,answerable,expected_behavior,tags,principal\nq1,reset password,true,,a|b,"{""id"": ""u1"", '
        '""groups"": [""all""]}"\nq2,"vpn, setup",1,,"[""x""]",\nn1,ceo of mars,false,empty,,\n'
    )
    pq.write_table(
        pa.table(
            {
                "document_id": ["d1", "d1", "d2"],
                "chunk_id": ["d1#1", "d1#2", "d2#1"],
                "acl": [["all"], ["all"], ["all", "hr"]],
                "effective_from": pa.array([None, None, 19000], pa.date32()),
            }
        ),
        ds / "documents.parquet",
    )
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, ds)
    assert con.execute(
        "SELECT case_id, tags, principal_id, principal_groups, answerable FROM cases ORDER BY line"
    ).fetchall() == [
        ("q1", ["a", "b"], "u1", ["all"], True),
        ("q2", ["x"], None, None, True),
        ("n1", None, None, None, False),
    ]
    assert con.execute("SELECT annotator FROM labels ORDER BY line").fetchall() == [("default",), ("bob",)]
    assert con.execute("SELECT acl FROM documents WHERE chunk_id = 'd2#1'").fetchone() == (["all", "hr"],)


def test_trec_run_tie_break_matches_trec_eval(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "queries.tsv").write_text("1\tfirst query\n2\tsecond query\n")
    (ds / "qrels.txt").write_text("1 0 docA 1\n1 0 docB 0\n2 0 docC 2\n")
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, ds)
    assert con.execute("SELECT unit, relevance_threshold FROM current_dataset").fetchone() == ("document", 1)
    run = tmp_path / "bm25.trec"
    # Recorded ranks disagree with scores on purpose; ties on score break by docno descending.
    run.write_text("1 Q0 docA 1 1.5 tagX\n1 Q0 docC 2 2.0 tagX\n1 Q0 docB 3 1.5 tagX\n1 Q0 docZ 4 1.5 tagX\n")
    rep = load_run(con, run)
    assert rep.target == "tagX"
    order = con.execute("SELECT document_id FROM results WHERE case_id = '1' ORDER BY rank").fetchall()
    assert [r[0] for r in order] == ["docC", "docZ", "docB", "docA"]
    # a TREC run records no k: it is judged at the default 10, not at its list depth (docs/metrics.md)
    assert con.execute("SELECT k, source_format FROM runs").fetchone() == (10, "trec")


def test_beir_layout(tmp_path: Path) -> None:
    ds = tmp_path / "beir"
    write_jsonl(ds / "queries.jsonl", [{"_id": "7", "text": "what is bm25"}, {"_id": "8", "text": "dense"}])
    write_jsonl(ds / "corpus.jsonl", [{"_id": "c1", "title": "BM25", "text": "a ranking function"}, {"_id": "c2"}])
    (ds / "qrels").mkdir()
    (ds / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n7\tc1\t1\n8\tc2\t2\n")
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, ds, threshold=2)
    assert con.execute("SELECT case_id, query FROM cases ORDER BY case_id").fetchall() == [
        ("7", "what is bm25"),
        ("8", "dense"),
    ]
    assert con.execute("SELECT case_id, unit_id, grade FROM qrels ORDER BY case_id").fetchall() == [
        ("7", "c1", 1),
        ("8", "c2", 2),
    ]
    assert con.execute("SELECT relevance_threshold FROM current_dataset").fetchone() == (2,)
    assert con.execute("SELECT title FROM documents WHERE unit_id = 'c1'").fetchone() == ("BM25",)


def test_beir_qrels_without_header_load_like_with_one(tmp_path: Path) -> None:
    ds = tmp_path / "beir"
    write_jsonl(ds / "queries.jsonl", [{"_id": "7", "text": "q"}])
    (ds / "qrels.tsv").write_text("7\tc1\t1\n7\tc2\t0\n")
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, ds)
    assert con.execute("SELECT case_id, unit_id, grade FROM qrels ORDER BY unit_id").fetchall() == [
        ("7", "c1", 1),
        ("7", "c2", 0),
    ]


def test_qrels_view_adjudication_and_document_rollup(tmp_path: Path) -> None:
    labels = [
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3, "annotator": "alice"},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 1, "annotator": "bob"},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#2", "grade": 2, "annotator": "alice"},
        {"case_id": "q2", "document_id": "d2", "chunk_id": "d2#1", "grade": 0, "annotator": "alice"},
        {"case_id": "q2", "document_id": "d2", "chunk_id": "d2#1", "grade": 3, "annotator": "bob"},
        {"case_id": "q2", "document_id": "d2", "chunk_id": "d2#1", "grade": 2, "annotator": "adjudicated"},
    ]
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, _good_dataset(tmp_path, labels=labels))
    assert con.execute("SELECT unit_id, grade, n_annotators, adjudicated FROM qrels ORDER BY unit_id").fetchall() == [
        ("d1#1", 2, 2, False),  # floor(median(3, 1)) = 2
        ("d1#2", 2, 1, False),
        ("d2#1", 2, 2, True),
    ]
    ds = _good_dataset(tmp_path / "doc", labels=labels)
    (ds / "dataset.json").write_text(json.dumps({"name": "t", "version": "1", "unit": "document"}))
    con2 = connect(tmp_path / "s2.duckdb")
    load_dataset(con2, ds)
    # document unit: chunk labels roll up to the document by max per annotator, then combine annotators
    assert con2.execute("SELECT unit_id, grade FROM qrels ORDER BY unit_id").fetchall() == [("d1", 2), ("d2", 2)]


def test_dataset_json_is_checked_by_the_shipped_schema_with_lines(tmp_path: Path) -> None:
    """dataset.json goes through contract/schemas/dataset.schema.json (jsonschema): one finding per violation,
    each with the line of its key; a missing key points at the object's first line."""
    ds = _good_dataset(tmp_path)
    text = '{\n  "name": "x",\n  "unit": "chunk",\n  "relevance_threshold": "two",\n  "grade_scale": 3\n}\n'
    (ds / "dataset.json").write_text(text)
    con = connect(tmp_path / "s.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_dataset(con, ds)
    errors = _errors(exc)
    assert errors[0] == f"{ds}/dataset.json:1: version: missing required field 'version'"
    assert errors[1].startswith(f"{ds}/dataset.json:4: relevance_threshold: wrong type")
    assert errors[2].startswith(f"{ds}/dataset.json:5: grade_scale: wrong type")
    assert len(errors) == 3


@pytest.mark.parametrize("stray", [True, False])
def test_row_rules_and_repeats_found_in_one_scan_say_what_they_said(tmp_path: Path, stray: bool) -> None:
    """The scan taking the duplicate-in-list hashes also tells whether a row rule is broken: with a unit outside
    the corpus (a row rule) and without one, every finding keeps its line, field and words."""
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, _good_dataset(tmp_path))
    first = ("d9", "d9#1") if stray else ("d1", "d1#2")
    results = [
        {"case_id": "q1", "rank": 1, "document_id": first[0], "chunk_id": first[1], "score": 1.0},
        {"case_id": "q1", "rank": 2, "document_id": "d1", "chunk_id": "d1#1", "score": 0.9},
        {"case_id": "q1", "rank": 3, "document_id": "d1", "chunk_id": "d1#1", "score": 0.8},
        {"case_id": "q2", "rank": 1, "document_id": "d2", "chunk_id": "d2#1", "score": 0.8},
        {"case_id": "q2", "rank": 2, "document_id": "d2", "chunk_id": "d2#1", "score": 0.7},
    ]
    rep = load_run(con, write_run(tmp_path / "run", {"run_id": "r", "k": 5}, results, None))
    again = "appears more than once in this ranked list; the first counts"
    expected = [
        (3, "chunk_id", "duplicate-in-list", f"chunk_id d1#1 {again}"),
        (5, "chunk_id", "duplicate-in-list", f"chunk_id d2#1 {again}"),
    ]
    if stray:
        unit = "result unit d9#1 is not in the corpus manifest (ingestion signal)"
        expected.insert(0, (1, "chunk_id", "result-unit-not-in-corpus", unit))
    assert [(w.line, w.field, w.code, w.message) for w in rep.warnings] == expected
