"""Stored classifications, `failures` (filters, freshness, recall bar, cutoffs) and the `failures` command."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ragtriage.classify import classify_run, failures
from ragtriage.cli import app
from ragtriage.notes import NotesStore
from ragtriage.store import StoreError, connect
from tests.unit.test_classify_locations import build, case, classified, label, results

FILL = ["F5#1", "F6#1", "F7#1", "F8#1"]


@pytest.fixture()
def store(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    # c: relevant F1#1 below k (ranking); d: heading A#1 ranks, body A#2 absent (ingestion, heading-only);
    # e: 1 of 2 relevant found (recall-below-bar); f: found, no failure
    cases = [case("c"), case("d"), case("e"), case("f")]
    labels = [
        label("c", "F1#1", 3),
        label("d", "A#2", 3),
        label("e", "F1#1", 3),
        label("e", "F2#1", 2),
        label("f", "F1#1", 3),
    ]
    rows = (
        results("c", [*FILL, "F1#1"])
        + results("d", ["A#1", *FILL[:3]])
        + results("e", ["F1#1", *FILL[:3]])
        + results("f", ["F1#1"])
    )
    return build(tmp_path, cases, labels, rows)


@pytest.mark.slow
def test_failures_ordered_and_joined_with_cases(store: duckdb.DuckDBPyConnection) -> None:
    rows = failures(store, "r").to_pylist()
    assert [(r["case_id"], r["failure"], r["category"], r["rule"]) for r in rows] == [
        ("c", "no-relevant-in-top-k", "ranking", "ranking.below-k"),
        ("d", "no-relevant-in-top-k", "ingestion", "ingestion.absent-from-runs"),
        ("e", "recall-below-bar", "ingestion", "ingestion.absent-from-runs"),
    ]
    assert rows[0]["query"] == "a question" and rows[0]["k"] == 4
    assert [r["case_id"] for r in failures(store, "r", category="ingestion").to_pylist()] == ["d", "e"]
    assert [r["case_id"] for r in failures(store, "r", pattern="heading-only").to_pylist()] == ["d"]


def test_recall_bar_comes_from_the_dataset(tmp_path: Path) -> None:
    dataset = {"name": "t", "version": "1", "unit": "chunk", "relevance_threshold": 2, "recall_bar": 0.5}
    labels = [label("e", "F1#1", 3), label("e", "F2#1", 2)]
    con = build(tmp_path, [case("e")], labels, results("e", ["F1#1", *FILL[:3]]), dataset=dataset)
    assert classified(con) == {}  # R@4 = 0.5 is not under the bar 0.5


@pytest.mark.slow
def test_store_replaces_the_runs_rows(store: duckdb.DuckDBPyConnection) -> None:
    first = classify_run(store, "r")
    again = classify_run(store, "r")
    assert first.equals(again)  # deterministic
    count = store.execute("SELECT count(*) FROM classifications WHERE run_id = 'r'").fetchall()[0][0]
    assert count == first.num_rows == 3
    store.execute("UPDATE classifications SET rule = 'edited' WHERE case_id = 'c'")
    assert failures(store, "r").to_pylist()[0]["rule"] == "edited"  # stored rows are what failures reads
    classify_run(store, "r")
    assert failures(store, "r").to_pylist()[0]["rule"] == "ranking.below-k"


def test_several_cutoffs(store: duckdb.DuckDBPyConnection) -> None:
    rows = classify_run(store, "r", ks=[1, 5], store=False).to_pylist()
    at = {(r["case_id"], r["k"]): r["failure"] for r in rows}
    assert at[("c", 1)] == "no-relevant-in-top-k" and ("c", 5) not in at  # F1#1 is at rank 5
    assert ("f", 1) not in at and ("f", 5) not in at
    assert at[("e", 1)] == at[("e", 5)] == "recall-below-bar"
    with pytest.raises(ValueError):
        classify_run(store, "r", ks=[0], store=False)


@pytest.mark.slow
def test_unknown_run_and_read_only(store: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        classify_run(store, "nope", store=False)
    store.close()
    ro = connect(tmp_path / "store.duckdb", read_only=True)
    with pytest.raises(StoreError, match="writable"):
        classify_run(ro, "r")
    assert failures(ro, "r").num_rows == 3  # computed on the fly, nothing stored
    ro.close()


@pytest.mark.slow
def test_cli_summary_filters_and_notes(store: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    store.close()
    db = tmp_path / "store.duckdb"
    NotesStore.open(db).set("r", "c", category="dataset", status="confirmed", note="label is wrong", author="t")
    runner = CliRunner()
    out = runner.invoke(app, ["failures", "--db", str(db), "--run", "r", "--summary", "--format", "json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output)
    counts = {(r["kind"], r["name"]): r["value"] for r in summary["rows"]}
    assert {name: n for (kind, name), n in counts.items() if kind == "category"} == {"ingestion": 2, "ranking": 1}
    assert {name: n for (kind, name), n in counts.items() if kind == "pattern"} == {"heading-only": 1}
    assert summary["context"]["failures"] == 3 and summary["context"]["cases"] == 3
    out = runner.invoke(app, ["failures", "--db", str(db), "--run", "r", "--format", "json", "--reclassify"])
    rows = json.loads(out.output)["rows"]
    assert [(r["case_id"], r["user_category"], r["status"]) for r in rows] == [
        ("c", "dataset", "confirmed"),
        ("d", None, None),
        ("e", None, None),
    ]
    assert rows[0]["category"] == "ranking"  # the note overrides in view only; the automatic verdict stays
    out = runner.invoke(app, ["failures", "--db", str(db), "--run", "r", "--format", "csv", "--category", "ranking"])
    assert out.exit_code == 0 and out.output.count("\n") == 2  # header + case c
    bad = runner.invoke(app, ["failures", "--db", str(db), "--run", "r", "--pattern", "nope"])
    assert bad.exit_code == 2 and "unknown pattern" in bad.output
    missing = runner.invoke(app, ["failures", "--db", str(tmp_path / "none.duckdb"), "--run", "r"])
    assert missing.exit_code == 2


@pytest.mark.slow
def test_stored_rows_go_stale_when_the_run_is_calibrated(tmp_path: Path) -> None:
    neg = {"answerable": False, "expected_behavior": "below_threshold"}
    con = build(tmp_path, [case("n", **neg)], [label("n", "F9#1", 0)], results("n", FILL, score=0.9))
    classify_run(con, "r")
    assert failures(con, "r").to_pylist()[0]["rule"] == "ranking.negative-answered"
    con.execute("UPDATE runs SET score_threshold = 0.5 WHERE run_id = 'r'")
    assert failures(con, "r").to_pylist()[0]["rule"] == "ranking.negative-confident-scores"
