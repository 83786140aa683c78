"""Loading a span dataset and span runs (docs/spans.md): the refusals, each with file:line:field and the store
left as it was; the plain-text form (TREC qrels and runs with docno ``document:start-end``) and CSV and Parquet
labels read as the JSONL form is."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from ragtriage.cli._app import app
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.store import connect
from tests.bad_inputs import digest
from tests.factory import write_dataset, write_run

DATASET = {"name": "t", "version": "1", "unit": "span", "relevance_threshold": 1}
CASES = [{"id": "q1", "query": "a"}]
LABELS = [
    {"case_id": "q1", "document_id": "d1", "start": 10, "end": 20, "grade": 2},
    {"case_id": "q1", "document_id": "d1", "start": 30, "end": 35, "grade": 1},
]
DOCS = [{"document_id": "d1", "text": "y" * 100}]
RESULTS = [
    {"case_id": "q1", "rank": 1, "document_id": "d1", "start": 0, "end": 12, "score": 2.0},
    {"case_id": "q1", "rank": 2, "document_id": "d1", "start": 12, "end": 40, "score": 1.0},
]
MEASURES = ["SpanRecall@10", "SpanPrecision@10", "SpanIoU@10", "P@2", "nDCG@2"]


def _load(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["load", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def _figures(db: Path, run: str) -> dict[str, float]:
    con = connect(db, read_only=True)
    try:
        return {r["measure"]: r["value"] for r in evaluate_run(con, run, MEASURES).per_case.to_pylist()}
    finally:
        con.close()


def test_bad_spans_are_refused_with_file_line_field_and_nothing_stored(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    bad = [
        {"case_id": "q1", "document_id": "d1", "start": 5, "end": 5, "grade": 1},  # start >= end
        {"case_id": "q1", "document_id": "d1", "start": -1, "end": 3, "grade": 1},  # negative
        {"case_id": "q1", "document_id": "d1", "start": 90, "end": 101, "grade": 1},  # past the text's 100
        {"case_id": "q1", "document_id": "d1", "grade": 1},  # no offsets
    ]
    ds = write_dataset(tmp_path / "bad", dataset=DATASET, cases=CASES, labels=bad, documents=DOCS)
    code, out = _load("--db", str(db), "--dataset", str(ds))
    assert code == 2
    lab = f"{ds}/labels.jsonl"
    assert f"{lab}:1: end: end 5 is not after start 5" in out
    assert f"{lab}:2: start: start -1 is negative" in out
    assert f"{lab}:3: end: end 101 is past the end of document d1 (100 characters" in out
    assert f"{lab}:4: start: the dataset unit is span: each label needs start and end" in out
    assert out.count(f"{lab}:4:") == 1  # one cause, reported once
    assert not db.exists() or digest(db) == {}  # nothing was stored
    good = write_dataset(tmp_path / "good", dataset=DATASET, cases=CASES, labels=LABELS, documents=DOCS)
    assert _load("--db", str(db), "--dataset", str(good))[0] == 0
    before = digest(db)
    no_offsets = write_run(tmp_path / "r", {"run_id": "R", "k": 10}, [{**RESULTS[0], "start": None}], None)
    code, out = _load("--db", str(db), "--run", str(no_offsets))
    assert code == 2 and f"{no_offsets}/results.jsonl:1: start: the dataset unit is span: each result needs" in out
    assert "start and end" in out
    past = write_run(tmp_path / "p", {"run_id": "P", "k": 10}, [{**RESULTS[0], "end": 120}], None)
    code, out = _load("--db", str(db), "--run", str(past))
    assert code == 2 and "results.jsonl:1: end: end 120 is past the end of document d1" in out
    trec = tmp_path / "plain.run"
    trec.write_text("q1 Q0 d1 1 1.0 t\n")  # a TREC run without offsets on a span dataset
    code, out = _load("--db", str(db), "--run", str(trec))
    assert code == 2 and f"{trec}:1: start:" in out and "docno doc:start-end" in out
    assert digest(db) == before


def test_plain_text_csv_and_parquet_forms_give_the_jsonl_figures(tmp_path: Path) -> None:
    jsonl_db = tmp_path / "j.duckdb"
    ds = write_dataset(tmp_path / "ds", dataset=DATASET, cases=CASES, labels=LABELS, documents=DOCS)
    run = write_run(tmp_path / "run", {"run_id": "A", "k": 10}, RESULTS, None)
    assert _load("--db", str(jsonl_db), "--dataset", str(ds), "--run", str(run))[0] == 0
    want = _figures(jsonl_db, "A")
    # hand: evidence [10,20) + [30,35) = 15; union [0,40) = 40; shared 15; both results relevant
    assert want["SpanRecall@10"] == 1.0 and want["SpanPrecision@10"] == 15 / 40 and want["P@2"] == 1.0

    qrels, trec_run = tmp_path / "q.qrels", tmp_path / "a.run"
    qrels.write_text("q1 0 d1:10-20 2\nq1 0 d1:30-35 1\n")
    trec_run.write_text("q1 Q0 d1:0-12 1 2.0 A\nq1 Q0 d1:12-40 2 1.0 A\n")
    trec_db = tmp_path / "t.duckdb"
    code, out = _load("--db", str(trec_db), "--qrels", str(qrels), "--unit", "span", "--run", str(trec_run))
    assert code == 0, out
    assert _figures(trec_db, "A") == want

    for fmt in ("csv", "parquet"):
        folder = tmp_path / fmt
        write_dataset(folder, dataset=DATASET, cases=CASES, labels=[], documents=DOCS)
        (folder / "labels.jsonl").unlink()
        if fmt == "csv":
            lines = ["case_id,document_id,start,end,grade"]
            lines += [f"{x['case_id']},{x['document_id']},{x['start']},{x['end']},{x['grade']}" for x in LABELS]
            (folder / "labels.csv").write_text("\n".join(lines) + "\n")
        else:
            pq.write_table(pa.Table.from_pylist(LABELS), folder / "labels.parquet")
        db = tmp_path / f"{fmt}.duckdb"
        code, out = _load("--db", str(db), "--dataset", str(folder), "--run", str(run))
        assert code == 0, out
        assert _figures(db, "A") == want, fmt


def test_chunk_labels_and_a_chunk_map_become_span_labels_a_new_chunking_is_judged_by(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ds = write_dataset(tmp_path / "ds", dataset=DATASET, cases=CASES, labels=LABELS[:1], documents=DOCS)
    assert _load("--db", str(db), "--dataset", str(ds))[0] == 0
    # the old chunking's labels: chunk ids only, placed by the map (no document_id column in the file)
    (tmp_path / "old.csv").write_text("case_id,chunk_id,grade\nq1,old-2,1\n")
    (tmp_path / "map.jsonl").write_text(
        '{"chunk_id": "old-1", "document_id": "d1", "start": 0, "end": 30}\n'
        '{"chunk_id": "old-2", "document_id": "d1", "start": 30, "end": 60}\n'
    )
    runner = CliRunner()
    args = ["import-labels", str(tmp_path / "old.csv"), "--annotator", "a", "--db", str(db)]
    res = runner.invoke(app, [*args, "--chunk-map", str(tmp_path / "map.jsonl")])
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    assert con.sql("SELECT unit_id, grade FROM qrels ORDER BY unit_id").fetchall() == [("d1:10-20", 2), ("d1:30-60", 1)]
    con.close()
    run = write_run(tmp_path / "new", {"run_id": "N", "k": 10}, [{**RESULTS[0], "start": 25, "end": 50}], None)
    assert _load("--db", str(db), "--run", str(run))[0] == 0
    # the new chunk [25,50) misses [10,20) and holds 20 of the carried span's 30 characters
    got = _figures(db, "N")
    assert got["SpanRecall@10"] == 20 / 40 and got["SpanPrecision@10"] == 20 / 25 and got["P@2"] == 0.5
    before = digest(db)
    (tmp_path / "bad.csv").write_text("case_id,chunk_id,grade\nq1,old-9,1\n")
    args[1] = str(tmp_path / "bad.csv")
    res = runner.invoke(app, [*args, "--chunk-map", str(tmp_path / "map.jsonl")])
    assert (
        res.exit_code == 2 and f"{tmp_path / 'bad.csv'}:2: chunk_id: chunk old-9 is not in the chunk map" in res.output
    )
    assert digest(db) == before
