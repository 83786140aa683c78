"""The session helper: a working local session, and one line naming the fix when pyspark or Java is missing."""

from __future__ import annotations

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
