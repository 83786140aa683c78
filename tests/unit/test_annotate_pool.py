"""Pool -> label -> import round trip: new versions, unjudged counts, validation, adjudication."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.annotate import build_pool, disagreements, import_labels, write_pool
from ragtriage.cli import app
from ragtriage.contract.errors import ValidationFailed
from tests.factory import make_store

CASES = [{"id": "q1", "query": "how to reset"}, {"id": "q2", "query": "refund rules"}]
DOCS = [
    {"document_id": "d1", "chunk_id": "d1#1", "title": "Guide", "text": "one", "acl": ["all"]},
    {"document_id": "d1", "chunk_id": "d1#2", "title": "Guide", "text": "two", "acl": ["all"]},
    {"document_id": "d1", "chunk_id": "d1#3", "title": "Guide", "text": "three", "acl": ["all"]},
    {"document_id": "d2", "chunk_id": "d2#1", "title": "FAQ", "text": "faq", "acl": ["all"]},
]
LABELS = [{"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3, "annotator": "alice"}]


def _res(case: str, chunk: str) -> dict[str, str]:
    return {"case_id": case, "document_id": chunk.split("#")[0], "chunk_id": chunk}


RUNS = [
    {
        "run": {"run_id": "r1", "k": 3},
        "results": [_res("q1", "d1#1"), _res("q1", "d1#2"), _res("q1", "d2#1"), _res("q2", "d1#3"), _res("q2", "d1#2")],
    },
    {
        "run": {"run_id": "r2", "k": 3},
        "results": [_res("q1", "d1#2"), _res("q1", "d1#2"), _res("q1", "d2#1"), _res("q1", "d1#3"), _res("q2", "d2#1")],
    },
]


@pytest.fixture
def con(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, runs=RUNS)


def test_pool_merges_runs_and_skips_judged(con) -> None:  # type: ignore[no-untyped-def]
    pool = build_pool(con, ["r1", "r2"], depth=2)
    rows = pool.select(["case_id", "unit_id", "runs", "best_rank"]).to_pylist()
    # r2 lists d1#2 twice: the repeat is dropped before the cut, so d2#1 is its 2nd unit.
    assert rows == [
        {"case_id": "q1", "unit_id": "d1#2", "runs": "r1,r2", "best_rank": 1},
        {"case_id": "q1", "unit_id": "d2#1", "runs": "r2", "best_rank": 2},
        {"case_id": "q2", "unit_id": "d1#3", "runs": "r1", "best_rank": 1},
        {"case_id": "q2", "unit_id": "d2#1", "runs": "r2", "best_rank": 1},
        {"case_id": "q2", "unit_id": "d1#2", "runs": "r1", "best_rank": 2},
    ]
    first = pool.to_pylist()[0]
    assert (first["query"], first["title"], first["text"]) == ("how to reset", "Guide", "two")
    assert (first["context_before"], first["context_after"]) == ("one", "three")
    assert first["rubric"] == "0 = irrelevant; 1 = related; 2 = useful; 3 = sufficient"
    assert first["grade"] is None and first["annotator"] is None
    with pytest.raises(Exception, match="unknown run"):
        build_pool(con, ["r1", "nope"])


def _fill(src: Path, dst: Path, grades: dict[tuple[str, str], int]) -> None:
    with src.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        g = grades.get((r["case_id"], r["unit_id"]))
        r["grade"] = "" if g is None else str(g)
    with dst.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_round_trip_creates_a_new_version(con, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    parent = con.execute("SELECT value FROM meta WHERE key = 'current_dataset'").fetchall()[0][0]
    write_pool(con, build_pool(con, ["r1", "r2"], depth=2), tmp_path / "pool.csv")
    _fill(tmp_path / "pool.csv", tmp_path / "labelled.csv", {("q1", "d1#2"): 2, ("q2", "d1#3"): 0, ("q2", "d2#1"): 3})
    rep = import_labels(con, tmp_path / "labelled.csv", annotator="bob", pool_runs=["r1", "r2"], depth=2)
    assert (rep.parent, rep.imported, rep.blank, rep.replaced) == (parent, 3, 2, 0)
    assert (rep.file_units, rep.unjudged, rep.pool_units, rep.pool_unjudged) == (5, 2, 6, 2)
    assert not rep.unchanged and rep.version != parent
    versions = con.execute("SELECT dataset_version, parent_version FROM datasets ORDER BY loaded_at").fetchall()
    assert versions == [(parent, None), (rep.version, parent)]
    counts = dict(con.execute("SELECT dataset_version, count(*) FROM all_labels GROUP BY ALL").fetchall())
    assert counts == {parent: 1, rep.version: 4}
    assert con.execute("SELECT count(*) FROM all_cases GROUP BY dataset_version").fetchall() == [(2,), (2,)]
    assert con.execute("SELECT grade FROM qrels WHERE case_id = 'q2' AND unit_id = 'd2#1'").fetchall() == [(3,)]
    assert con.execute("SELECT annotator FROM labels WHERE unit_id = 'd1#3'").fetchall() == [("bob",)]
    assert build_pool(con, ["r1", "r2"], depth=2).column("unit_id").to_pylist() == ["d2#1", "d1#2"]
    again = import_labels(con, tmp_path / "labelled.csv", annotator="bob")
    assert again.unchanged and again.version == rep.version and again.replaced == 3


def test_jsonl_pool_and_regrade_replaces_same_annotator(con, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_pool(con, build_pool(con, ["r1"], depth=1), tmp_path / "pool.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [(r["case_id"], r["unit_id"]) for r in rows] == [("q2", "d1#3")]  # q1's top unit is judged
    rows[0].update(grade=1, annotator="carol")
    rows.append({"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 1, "annotator": "alice"})
    (tmp_path / "l.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = import_labels(con, tmp_path / "l.jsonl", annotator="ignored")
    assert (rep.imported, rep.replaced, rep.unjudged) == (2, 1, 0)
    assert sorted(con.execute("SELECT unit_id, grade, annotator FROM labels").fetchall()) == [
        ("d1#1", 1, "alice"),
        ("d1#3", 1, "carol"),
    ]


def test_invalid_rows_name_line_and_field_and_write_nothing(con, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "case_id,document_id,chunk_id,grade\nq1,d1,d1#2,7\nqX,d1,d1#2,1\nq1,d1,d1#3,two\nq2,d1,d1#2,2\nq2,d1,d1#2,3\n"
    )
    with pytest.raises(ValidationFailed) as exc:
        import_labels(con, bad, annotator="bob")
    got = {(e.line, e.field, e.code) for e in exc.value.errors}
    assert got == {
        (2, "grade", "grade-out-of-scale"),
        (3, "case_id", "unknown-case-id"),
        (4, "grade", "wrong-type"),
        (6, "grade", "duplicate"),
    }
    assert con.execute("SELECT count(*) FROM datasets").fetchall() == [(1,)]
    warn = tmp_path / "warn.csv"
    warn.write_text("case_id,document_id,chunk_id,grade\nq1,d9,d9#1,2\n")
    rep = import_labels(con, warn, annotator="bob")
    assert [(w.line, w.code) for w in rep.warnings] == [(2, "label-unit-not-in-snapshot")]
    empty = tmp_path / "blank.csv"
    empty.write_text("case_id,document_id,chunk_id,grade\nq1,d1,d1#2,\n")
    with pytest.raises(ValidationFailed, match="no row has a grade"):
        import_labels(con, empty, annotator="bob")


def test_adjudicated_grades_win(tmp_path: Path) -> None:
    labels = [
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3, "annotator": "alice"},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 0, "annotator": "bob"},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#2", "grade": 2, "annotator": "alice"},
        {"case_id": "q1", "document_id": "d1", "chunk_id": "d1#2", "grade": 1, "annotator": "bob"},
    ]
    con = make_store(tmp_path, cases=CASES, labels=labels, documents=DOCS)
    # floor of the median of 3 and 0
    assert con.execute("SELECT grade, adjudicated FROM qrels WHERE unit_id = 'd1#1'").fetchall() == [(1, False)]
    todo = disagreements(con, include_adjudicated=False)
    assert todo.column("unit_id").to_pylist() == ["d1#1"]
    write_pool(con, todo, tmp_path / "dis.csv")
    _fill(tmp_path / "dis.csv", tmp_path / "dis-done.csv", {("q1", "d1#1"): 2})
    import_labels(con, tmp_path / "dis-done.csv", annotator="adjudicated")
    assert con.execute("SELECT grade, adjudicated FROM qrels WHERE unit_id = 'd1#1'").fetchall() == [(2, True)]
    assert disagreements(con, include_adjudicated=False).num_rows == 0


@pytest.mark.slow
def test_cli_round_trip(con, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    con.close()
    db = str(tmp_path / "store.duckdb")
    runner = CliRunner()
    res = runner.invoke(app, ["pool", "--db", db, "--runs", "r1,r2", "--depth", "2", "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    assert "5 unjudged unit(s) over 2 case(s)" in res.output
    _fill(tmp_path / "p.csv", tmp_path / "l.csv", {("q1", "d1#2"): 2})
    res = runner.invoke(app, ["import-labels", str(tmp_path / "l.csv"), "--annotator", "bob", "--db", db])
    assert res.exit_code == 0, res.output
    assert "still unjudged: 4 of the file's 5 unit(s)" in res.output
    res = runner.invoke(app, ["agreement", "--db", db, "--json"])
    assert res.exit_code == 0 and json.loads(res.output)[0]["pairs"] == 0
    res = runner.invoke(app, ["pool", "--db", db, "--runs", "r1", "--out", str(tmp_path / "p.txt")])
    assert res.exit_code == 2 and ".csv or .jsonl" in res.output


def test_a_streamed_pool_is_the_same_file_and_count(tmp_path: Path) -> None:
    import pyarrow as pa

    from ragtriage.annotate.pool import PoolTally
    from ragtriage.csv_out import write_csv, write_csv_batches

    table = pa.table(
        {"case_id": ["a", "a", "b", "b", "b", "c"], "text": ["=SUM(A1)", "x", "-3", "-y", "é", None], "n": range(6)}
    )
    whole, streamed = tmp_path / "whole.csv", tmp_path / "streamed.csv"
    write_csv(table, whole)
    tally = PoolTally()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))
    assert write_csv_batches(tally.through(reader), streamed) == 6
    assert streamed.read_bytes() == whole.read_bytes()
    assert b"'=SUM(A1)" in streamed.read_bytes()
    assert (tally.rows, tally.cases) == (6, 3)  # b spans two batches and counts once
    empty = tmp_path / "empty.csv"
    assert write_csv_batches(pa.RecordBatchReader.from_batches(table.schema, []), empty) == 0
    assert empty.read_text(encoding="utf-8") == '"case_id","text","n"\n'


def test_the_pool_command_streams_what_build_pool_returns(con, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    expected = tmp_path / "expected.csv"
    write_pool(con, build_pool(con, ["r1", "r2"], depth=2), expected)
    con.close()
    out = tmp_path / "pool.csv"
    db = str(tmp_path / "store.duckdb")
    res = CliRunner().invoke(app, ["pool", "--db", db, "--runs", "r1,r2", "--depth", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "5 unjudged unit(s) over 2 case(s)" in res.output
    assert out.read_bytes() == expected.read_bytes()


@pytest.mark.parametrize("name", ["pool.csv", "pool.jsonl"])
def test_a_pool_cut_short_leaves_no_file(con, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    """A stream that fails part-way leaves neither a shorter pool nor its partial file."""
    import duckdb
    import pyarrow as pa

    whole = build_pool(con, ["r1", "r2"], depth=2)
    folder = tmp_path / "out"
    folder.mkdir()

    def batches():  # type: ignore[no-untyped-def]
        yield whole.to_batches()[0].slice(0, 1)
        raise RuntimeError("the query failed")

    reader = pa.RecordBatchReader.from_batches(whole.schema, batches())
    with pytest.raises((RuntimeError, duckdb.Error), match="the query failed"):
        write_pool(con, reader, folder / name)
    assert list(folder.iterdir()) == []
    write_pool(con, pa.RecordBatchReader.from_batches(whole.schema, whole.to_batches()), folder / name)
    assert [p.name for p in folder.iterdir()] == [name]
