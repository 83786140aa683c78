"""`ragtriage export-notes` over the real core: the CSV carries the classifier's and the metrics' own values."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.notes import NotesStore, notes_path_for
from tests.factory import make_store
from tests.tui.conftest import CASES, DOCS, LABELS, _results

runner = CliRunner()


@pytest.mark.slow
def test_export_notes_cli(tmp_path: Path) -> None:
    con = make_store(
        tmp_path,
        cases=CASES,
        labels=LABELS,
        documents=DOCS,
        runs=[{"run": {"run_id": "bm25", "k": 2, "candidate_k": 5}, "results": _results("d1#2")}],
        db="t.duckdb",
    )
    from ragtriage.classify import failures
    from ragtriage.metrics import per_case

    auto: dict[str, set[str]] = {}
    for r in failures(con, "bm25").to_pylist():
        auto.setdefault(r["case_id"], set()).add(r["rule"])
    metrics = {r["case_id"]: r for r in per_case(con, "bm25").to_pylist()}
    con.close()
    db = tmp_path / "t.duckdb"
    store = NotesStore(notes_path_for(db))
    note = store.set("bm25", "q3", category="security", status="confirmed", note='+leak, "quoted"', author="ann")
    out = tmp_path / "n.csv"
    res = runner.invoke(app, ["export-notes", "--db", str(db), "--csv", str(out), "--run", "bm25"])
    assert res.exit_code == 0, res.output
    with out.open(encoding="utf-8", newline="") as f:
        rows = {r["case_id"]: r for r in csv.DictReader(f)}
    assert set(rows) == set(auto) | {"q3"}
    q3 = rows["q3"]
    assert (q3["run_id"], q3["query"], q3["user_category"], q3["status"], q3["note"], q3["author"]) == (
        "bm25",
        "salary bands",
        "security",
        "confirmed",
        '\'+leak, "quoted"',
        "ann",
    )
    assert q3["updated_at"] == note.updated_at
    assert "security" in q3["auto_category"].split("; ")
    assert q3["auto_rule"].split("; ") == sorted(auto["q3"])
    assert float(q3["nDCG@10"]) == metrics["q3"]["nDCG@10"]
    res = runner.invoke(app, ["export-notes", "--db", str(db), "--csv", str(out), "--run", "nope", "--force"])
    assert res.exit_code == 2 and "unknown run 'nope'" in res.output
