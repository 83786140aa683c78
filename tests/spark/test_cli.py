"""`ragtriage metrics --engine spark` end to end (in-process, on the test session's Spark): the same table, JSON
and trec_eval layout as the DuckDB engine, and one line with exit 2 for what it cannot do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.spark.conftest import SPARK_MARKS
from tests.spark.test_engine import QRELS, RUN

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("spark-cli")
    (folder / "qrels.txt").write_text(QRELS)
    (folder / "run.txt").write_text(RUN)
    return str(folder / "qrels.txt"), str(folder / "run.txt")


def _metrics(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["metrics", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--format", "json", "-m", "nDCG@10", "-m", "P(rel=2)@5", "-m", "AP", "-m", "Bpref", "-m", "relstring"],
        ["--trec-compat", "--format", "trec", "--per-case", "--k", "1,5"],
    ],
    ids=["json", "trec-per-query"],
)
def test_same_output_as_duckdb(spark: SparkSession, files: tuple[str, str], args: list[str]) -> None:
    qrels, run = files
    code, out, err = _metrics("--engine", "spark", "--qrels", qrels, "--run", run, *args)
    assert code == 0, err
    duck_code, duck_out, duck_err = _metrics("--qrels", qrels, "--run", run, *args)
    assert duck_code == 0
    assert out == duck_out
    if "trec" in args:
        assert err.splitlines()[-1] == duck_err.splitlines()[-1]  # the header lines on stderr
        assert "map                   \tall\t" in out


def test_a_new_process_starts_local_spark(spark: SparkSession, files: tuple[str, str]) -> None:
    """The path a user takes: no session yet, so the command starts a local one; only the figures on stdout."""
    qrels, run = files
    args = ["metrics", "--qrels", qrels, "--run", run, "-m", "nDCG@5", "-m", "RR", "--format", "json"]
    command = [sys.executable, "-m", "ragtriage.cli"]
    # tiny data: interpreted plans, as the test session runs them (compiling them costs more here)
    quick = "--conf spark.sql.codegen.wholeStage=false --conf spark.sql.codegen.factoryMode=NO_CODEGEN pyspark-shell"
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": quick}
    spark_run = subprocess.run(
        [*command, *args, "--engine", "spark"], capture_output=True, text=True, timeout=600, env=env
    )
    duck_run = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
    assert spark_run.returncode == 0, spark_run.stderr[-2000:]
    assert spark_run.stdout == duck_run.stdout
    assert json.loads(spark_run.stdout)["rows"][1]["measure"] == "RR"


def test_what_spark_cannot_do_exits_2(spark: SparkSession, files: tuple[str, str], tmp_path: Path) -> None:
    qrels, run = files
    code, _, err = _metrics("--engine", "spark", "--qrels", qrels, "--run", run, "--by", "topic")
    assert code == 2 and "drop --by" in err
    code, _, err = _metrics("--engine", "spark", "--run", run)
    assert code == 2 and "give --qrels FILE and --run FILE" in err
    code, _, err = _metrics("--spark-master", "local[1]", "--qrels", qrels, "--run", run)
    assert code == 2 and "--spark-master is for --engine spark" in err
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 0 d1 \x1b[2J1.5\n")
    code, _, err = _metrics("--engine", "spark", "--qrels", str(bad), "--run", run)
    assert code == 2 and "grade: not an integer grade" in err and "\x1b" not in err
    code, _, err = _metrics("--engine", "spark", "--qrels", str(tmp_path / "absent.txt"), "--run", run)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
