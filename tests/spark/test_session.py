"""The session helper: a working local session, and one line naming the fix when pyspark or Java is missing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ragtriage.spark import SparkUnavailable, get_session, pyspark_missing
from tests.spark.conftest import SPARK_MARKS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = SPARK_MARKS


def test_local_session_runs_sql(spark: SparkSession) -> None:
    assert spark.sql("SELECT 1 + 1 AS two").collect()[0]["two"] == 2
    assert get_session() is spark  # the active session is reused, not a second JVM


def test_missing_java_is_one_line_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    reason = pyspark_missing()
    assert reason is not None and "Java" in reason and "ragtriage[spark]" not in reason
    with pytest.raises(SparkUnavailable, match="openjdk-17-jre-headless"):
        get_session()


def test_missing_pyspark_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    with pytest.raises(SparkUnavailable, match=r"pip install 'ragtriage\[spark\]'"):
        get_session()


def test_master_and_spark_remote_together_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:1")
    with pytest.raises(SparkUnavailable, match="unset one"):
        get_session("local[1]")


def test_a_spark_submit_job_keeps_its_own_master(tmp_path: Path) -> None:
    """Under spark-submit the JVM holds the job's master: get_session must not replace it by local[2]."""
    import os
    import subprocess
    import sys

    import pyspark

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if not submit.exists():
        pytest.skip("this pyspark has no bin/spark-submit")
    job = tmp_path / "job.py"
    job.write_text(
        "from ragtriage.spark import get_session\n"
        "s = get_session()\n"
        "print('MASTER=' + s.sparkContext.master)\n"
        "s.stop()\n"
    )
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_REMOTE", None)
    res = subprocess.run(
        [str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false", str(job)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "MASTER=local[1]" in res.stdout, res.stdout
