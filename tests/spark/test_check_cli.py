"""`ragtriage check --engine spark` as a user runs it: a subprocess on the sample, its Parquet output loaded by
`ragtriage load`, and the DuckDB check on that store giving the same leak rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from ragtriage.checks import leakage
from ragtriage.store import connect
from tests.factory import SAMPLE
from tests.spark.conftest import SPARK_MARKS

pytestmark = SPARK_MARKS

KEY = ("stage", "case_id", "rank", "rule")


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragtriage.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_check_on_spark_writes_what_load_reads_and_duckdb_agrees(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = SAMPLE / "runs" / "no-acl-filter"
    done = cli(
        "check", "--engine", "spark", "--dataset", SAMPLE / "dataset", "--run", run, "--format", "json", "--output", out
    )
    assert done.returncode == 1, done.stderr  # a leak fails the run
    report = json.loads(done.stdout)
    assert report["context"]["verdict"] == "FAILED: leakage; 3 case(s) NOT CHECKED (no principal)"
    counts = {c["check"]: c["count"] for c in report["counts"]}
    assert counts["leak_findings"] == 3873 and counts["leaked_result_rows"] == 2681
    assert "scope_violations" not in counts  # a check the Spark engine does not run is not reported as zero
    assert any("not run: filter scope" in n for n in report["notes"])

    db = tmp_path / "store.duckdb"
    loaded = cli("load", "--db", db, "--dataset", out / "dataset", "--run", out / "run", "--no-precompute")
    assert loaded.returncode == 0, loaded.stderr
    con = connect(db, read_only=True)
    duck = leakage(con, "no-acl-filter")
    con.close()
    spark_rows = pq.read_table(out / "leakage.parquet")
    assert spark_rows.select(list(KEY)).to_pylist() == duck.select(list(KEY)).to_pylist()
    assert spark_rows["detail"].to_pylist() == duck["detail"].to_pylist()
    # the JSON rows are those rows (and the unchecked cases) in the findings shape, as the DuckDB command prints them
    duck_json = json.loads(cli("check", "--db", db, "--run", "no-acl-filter", "--format", "json").stdout)
    assert report["rows"] == [r for r in duck_json["rows"] if r["check"] in ("leakage", "unchecked")]


def test_bad_invocations_exit_2_before_spark_starts(tmp_path: Path) -> None:
    run = SAMPLE / "runs" / "bm25"
    missing = cli("check", "--engine", "spark", "--run", run)
    assert missing.returncode == 2 and "--engine spark needs --dataset" in missing.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x", encoding="utf-8")
    taken = cli(
        "check", "--engine", "spark", "--dataset", SAMPLE / "dataset", "--run", run, "--output", tmp_path / "full"
    )
    assert taken.returncode == 2 and "is not an empty folder" in taken.stderr
    assert (tmp_path / "full" / "keep.txt").read_text(encoding="utf-8") == "x"
    wrong = cli("check", "--engine", "duckdb", "--run", "bm25", "--output", tmp_path / "o")
    assert wrong.returncode == 2 and "go with --engine spark" in wrong.stderr
