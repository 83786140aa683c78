"""The loader's fast path for results: Parquet read through a typed view, rules run over the written rows, and
duplicate checks that look at a cheap suspect set first. Each test would fail if the shortcut missed a case."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragtriage.contract.errors import ValidationFailed
from ragtriage.store import connect, load_dataset, load_run
from ragtriage.store.connection import StoreError
from ragtriage.store.schema import SCHEMA_VERSION
from tests.factory import write_dataset, write_run

CASES = [{"id": "q1", "query": "reset password"}, {"id": "q2", "query": "vpn setup"}]
LABELS = [{"case_id": "q1", "document_id": "d1", "chunk_id": "c1", "grade": 3}]


def _store(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = connect(tmp_path / "s.duckdb")
    load_dataset(con, write_dataset(tmp_path / "ds", cases=CASES, labels=LABELS))
    return con


def _rows(n: int, case: str = "q1") -> list[dict[str, object]]:
    return [
        {"case_id": case, "rank": i, "document_id": f"d{i}", "chunk_id": f"c{i}", "score": 1.0 / i}
        for i in range(1, n + 1)
    ]


def _parquet_run(root: Path, rows: list[dict[str, object]], schema: pa.Schema | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "run.json").write_text(json.dumps({"run_id": root.name, "k": 10}))
    keys = list(dict.fromkeys(k for r in rows for k in r))  # from_pylist reads the first row's keys only
    table = pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows], schema=schema)
    pq.write_table(table, root / "results.parquet")
    return root


def test_parquet_run_is_written_with_run_key_stage_and_unit(tmp_path: Path) -> None:
    con = _store(tmp_path)
    rows = _rows(3) + [{**r, "stage": "candidate"} for r in _rows(2, "q2")]
    load_run(con, _parquet_run(tmp_path / "pq", rows))
    load_run(con, write_run(tmp_path / "js", {"run_id": "js", "k": 10}, _rows(1), None))
    got = con.execute(
        "SELECT run_id, case_id, stage, rank, unit_id, line FROM results ORDER BY run_id, case_id, rank"
    ).fetchall()
    assert got == [
        ("js", "q1", "final", 1, "c1", 1),
        ("pq", "q1", "final", 1, "c1", 1),
        ("pq", "q1", "final", 2, "c2", 2),
        ("pq", "q1", "final", 3, "c3", 3),
        ("pq", "q2", "candidate", 1, "c1", 4),
        ("pq", "q2", "candidate", 2, "c2", 5),
    ]
    assert con.execute("SELECT run_id, run_key, unit FROM runs ORDER BY run_key").fetchall() == [
        ("pq", 1, "chunk"),
        ("js", 2, "chunk"),
    ]


def test_parquet_type_errors_are_reported_with_the_rules_and_nothing_is_written(tmp_path: Path) -> None:
    con = _store(tmp_path)
    rows: list[dict[str, object]] = [
        {"case_id": "q1", "rank": "one", "document_id": "d1", "chunk_id": "c1", "score": 1.0},
        {"case_id": "q9", "rank": "2", "document_id": "d2", "chunk_id": "c2", "score": 0.5},
        {"case_id": "q1", "rank": "3", "document_id": "d3", "chunk_id": "c3", "score": 0.2, "stage": "rerank"},
    ]
    run = _parquet_run(tmp_path / "bad", rows)
    with pytest.raises(ValidationFailed) as exc:
        load_run(con, run)
    errs = [str(e) for e in exc.value.errors]
    assert f"{run}/results.parquet:1: rank: wrong type: expected an integer (row 1)" in errs
    assert not any("q9" in e for e in errs)  # not a case: ignored with a warning once the rows are valid
    assert f"{run}/results.parquet:3: stage: value rerank is not one of candidate|final (row 3)" in errs
    assert con.execute("SELECT count(*) FROM result_rows").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_bad_stage_alone_is_refused_before_writing(tmp_path: Path) -> None:
    con = _store(tmp_path)
    rows = [{**_rows(1)[0], "stage": "rerank"}]
    with pytest.raises(ValidationFailed, match="stage: value rerank is not one of candidate\\|final"):
        load_run(con, write_run(tmp_path / "r", {"run_id": "r", "k": 10}, rows, None))
    assert con.execute("SELECT count(*) FROM result_rows").fetchone() == (0,)


def test_duplicate_ranks_are_found_in_any_block_of_64_and_only_there(tmp_path: Path) -> None:
    con = _store(tmp_path)
    # 1, 65, 129 share their low six bits but sit in different blocks: not duplicates.
    spread = [{**r, "rank": rk} for r, rk in zip(_rows(3), [1, 65, 129], strict=True)]
    load_run(con, write_run(tmp_path / "ok", {"run_id": "ok", "k": 10}, spread, None))
    # a long list, duplicated at rank 130 (lines 130 and 201)
    long = _rows(200) + [{**_rows(130)[-1], "chunk_id": "x", "document_id": "x"}]
    with pytest.raises(ValidationFailed) as exc:
        load_run(con, write_run(tmp_path / "dup", {"run_id": "dup", "k": 10}, long, None))
    assert [str(e) for e in exc.value.errors] == [
        f"{tmp_path}/dup/results.jsonl:201: rank: duplicate (case_id, stage, rank) q1 / final / 130"
    ]


def test_repeated_units_far_apart_are_one_warning_each(tmp_path: Path) -> None:
    con = _store(tmp_path)
    rows = _rows(150)
    rows[139] = {**rows[139], "chunk_id": "c3", "document_id": "d3"}  # rank 140 repeats rank 3's chunk
    rows += [{**r, "stage": "candidate"} for r in _rows(5)]  # the same chunks in another stage: no repeat
    rep = load_run(con, write_run(tmp_path / "r", {"run_id": "r", "k": 10}, rows, None))
    assert [(w.line, w.code, w.message) for w in rep.warnings] == [
        (140, "duplicate-in-list", "chunk_id c3 appears more than once in this ranked list; the first counts")
    ]


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = connect(db)
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    for read_only in (False, True):
        expected = f"schema version 1, this ragtriage reads version {SCHEMA_VERSION}; load the dataset"
        with pytest.raises(StoreError, match=expected):
            connect(db, read_only=read_only)


def _refused(con: duckdb.DuckDBPyConnection, run: Path) -> list[str]:
    with pytest.raises(ValidationFailed) as exc:
        load_run(con, run)
    assert con.execute("SELECT count(*) FROM result_rows").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    return [str(e) for e in exc.value.errors]


def test_a_parquet_row_breaking_a_check_is_refused_in_any_case(tmp_path: Path) -> None:
    """The insert writes the clean rows of known cases only and the checks run when it wrote fewer rows than the
    file holds: a bad row is refused whether its case is known, unknown (never written) or missing."""
    con = _store(tmp_path)
    big = pa.schema(
        [("case_id", pa.string()), ("rank", pa.int64()), ("document_id", pa.string()), ("chunk_id", pa.string())]
    )
    far = "rank: rank 1099511627776 is out of range (-2147483648..2147483647) (row 2)"
    cases = [
        ("unknown", {"case_id": "q9", "rank": 2**40, "document_id": "d2"}, far),
        ("known", {"case_id": "q1", "rank": 2**40, "document_id": "d2"}, far),
        (
            "nodoc",
            {"case_id": "q1", "rank": 2, "document_id": None},
            "document_id: missing required field 'document_id'",
        ),
        (
            "blank",
            {"case_id": "q1", "rank": 2, "document_id": " "},
            "document_id: missing required field 'document_id'",
        ),
        ("nocase", {"case_id": None, "rank": 2, "document_id": "d2"}, "case_id: missing required field 'case_id'"),
    ]
    for name, bad, message in cases:
        rows = [{"case_id": "q1", "rank": 1, "document_id": "d1", "chunk_id": "c1"}, {**bad, "chunk_id": "c2"}]
        errs = _refused(con, _parquet_run(tmp_path / name, rows, big))
        suffix = "" if message == far else " (row 2)"
        assert errs == [f"{tmp_path / name}/results.parquet:2: {message}{suffix}"]


def test_a_parquet_run_with_rows_of_no_case_keeps_the_others(tmp_path: Path) -> None:
    con = _store(tmp_path)
    rows = _rows(2) + _rows(3, "q9")
    rep = load_run(con, _parquet_run(tmp_path / "pq", rows))
    assert (rep.rows["results"], rep.ignored_topics, rep.ignored_rows) == (2, 1, 3)
    assert [w.code for w in rep.warnings] == ["topic-not-a-case"]
    assert con.execute("SELECT case_id, rank FROM results ORDER BY rank").fetchall() == [("q1", 1), ("q1", 2)]


def test_a_parquet_type_error_is_reported_beside_an_error_found_before_the_insert(tmp_path: Path) -> None:
    con = _store(tmp_path)
    load_run(con, _parquet_run(tmp_path / "pq", _rows(1)))
    again = _parquet_run(tmp_path / "again", [{**_rows(1)[0], "rank": "first"}])
    (again / "run.json").write_text(json.dumps({"run_id": "pq", "k": 10}))
    with pytest.raises(ValidationFailed) as exc:
        load_run(con, again)
    assert sorted((e.code, e.field) for e in exc.value.errors) == [("duplicate-run", "run_id"), ("wrong-type", "rank")]
    assert con.execute("SELECT count(*) FROM result_rows").fetchone() == (1,)


def test_a_run_without_chunks_snippets_or_metadata_is_stored_without_those_columns(tmp_path: Path) -> None:
    """Such a run's rows go to result_rows_plain (no NULL columns written), any other run's to result_rows_full;
    the results view shows both alike, and a replaced run leaves no row in either table."""
    con = connect(tmp_path / "s.duckdb")
    doc = {"name": "t", "version": "1", "unit": "document", "relevance_threshold": 1}
    load_dataset(con, write_dataset(tmp_path / "ds", dataset=doc, cases=CASES, labels=LABELS))
    nulls = pa.schema([("case_id", pa.string()), ("rank", pa.int64()), ("document_id", pa.string()),
                       ("chunk_id", pa.string()), ("snippet", pa.string())])  # fmt: skip
    plain = [{"case_id": "q1", "rank": i, "document_id": f"d{i}", "chunk_id": None, "snippet": None} for i in (1, 2)]
    load_run(con, _parquet_run(tmp_path / "pq", plain, nulls))  # the columns are there, every value NULL
    rich = [{"case_id": "q2", "rank": 1, "document_id": "d1", "snippet": "vpn", "metadata": {"a": 1}}]
    load_run(con, write_run(tmp_path / "js", {"run_id": "js", "k": 10}, rich, None))

    def stored() -> list[tuple[object, ...]]:
        return con.execute(
            """SELECT 'plain', run_key, count(*) FROM result_rows_plain GROUP BY ALL
               UNION ALL SELECT 'full', run_key, count(*) FROM result_rows_full GROUP BY ALL ORDER BY ALL"""
        ).fetchall()

    assert stored() == [("full", 2, 1), ("plain", 1, 2)]
    got = con.execute("SELECT * FROM results ORDER BY run_id, rank").fetchall()
    assert [d[0] for d in con.execute("DESCRIBE results").fetchall()] == [
        "run_id", "case_id", "stage", "rank", "document_id", "chunk_id", "unit_id", "span_start", "span_end",
        "score", "snippet", "metadata", "line",
    ]  # fmt: skip
    assert got == [
        ("js", "q2", "final", 1, "d1", None, "d1", None, None, None, "vpn", '{"a":1}', 1),
        ("pq", "q1", "final", 1, "d1", None, "d1", None, None, None, None, None, 1),
        ("pq", "q1", "final", 2, "d2", None, "d2", None, None, None, None, None, 2),
    ]
    load_run(con, write_run(tmp_path / "pq2", {"run_id": "pq", "k": 10}, rich, None), replace=True)
    load_run(con, _parquet_run(tmp_path / "js2", plain, nulls), run_id="js", replace=True)
    assert stored() == [("full", 3, 1), ("plain", 4, 2)]  # a replaced run takes a new key; its old rows are gone
