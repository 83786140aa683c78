"""Every new dataset version's labels come from one definition (``annotate.versions.fork_with_labels``): an import
of labelled rows and a judge's fill each carry the parent's labels over and replace only the label of the same
case, unit and annotator. Run through the CLI, on a file store, the judge against a real local chat server."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from ragtriage.annotate import versions
from ragtriage.cli import app
from tests.judge_server import chat_server
from tests.unit.test_judge_server import db, judge, script  # noqa: F401  (db is a fixture)


def _labels(store: Path) -> set[tuple[object, ...]]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return set(con.execute("SELECT case_id, unit_id, grade, annotator FROM labels").fetchall())
    finally:
        con.close()


def test_import_and_fill_fork_through_one_definition(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    forked: list[str] = []
    fork_version = versions.fork_version

    def spy(con: duckdb.DuckDBPyConnection, parent: str, labels_relation: str) -> tuple[str, bool]:
        forked.append(labels_relation)
        return fork_version(con, parent, labels_relation)

    monkeypatch.setattr(versions, "fork_version", spy)
    before = _labels(db)
    assert ("q2", "d2#1", 2, "alice") in before

    # alice re-grades one unit; bob labels the same unit: one replacement, one addition
    f = tmp_path / "more.csv"
    f.write_text("case_id,document_id,chunk_id,grade,annotator\nq2,d2,d2#1,1,alice\nq2,d2,d2#1,3,bob\n")
    res = CliRunner().invoke(app, ["import-labels", str(f), "--annotator", "x", "--db", str(db)])
    assert res.exit_code == 0, res.output
    imported = _labels(db)
    assert imported == (before - {("q2", "d2#1", 2, "alice")}) | {("q2", "d2#1", 1, "alice"), ("q2", "d2#1", 3, "bob")}
    assert "2 label(s) imported, 1 earlier label(s) of the same annotator replaced" in res.output

    with chat_server(script) as srv:
        assert judge(db, srv, "--calibrate", "4")[0] == 0
        code, _, err = judge(db, srv, "--fill", "--runs", "r1", "--depth", "3")
        assert code == 0, err
    filled = _labels(db)
    people = {row for row in filled if not str(row[3]).startswith("judge:")}
    assert people == imported  # a judge label replaces no person's label
    judged = {(c, u, g) for c, u, g, a in filled if a == "judge:m"}
    assert {("q1", "d1#2", 0), ("q3", "d3#2", 2), ("q3", "d1#1", 3)} <= judged  # the pool's unjudged units

    assert forked == [versions.CHILD_LABELS, versions.CHILD_LABELS]  # both went through fork_with_labels
