"""One local SparkSession for the whole test session (a JVM start costs seconds; every Spark test shares it).

Spark tests are ``slow`` (CI runs them; plain ``pytest`` does not) and grouped on one xdist worker
(``xdist_group("spark")`` with ``--dist loadgroup``) so the suite starts one JVM, not one per worker. Without
pyspark or Java they skip and say which is missing, unless RAGTRIAGE_REQUIRE_SPARK is set (CI sets it and
installs both: .ci/run, the test extra).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ragtriage.spark import get_session, pyspark_missing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Marks every Spark test module carries: ``pytestmark = SPARK_MARKS``.
SPARK_MARKS = [pytest.mark.slow, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    reason = pyspark_missing()
    if reason:
        if os.environ.get("RAGTRIAGE_REQUIRE_SPARK"):
            pytest.fail(f"RAGTRIAGE_REQUIRE_SPARK is set: {reason}")
        pytest.skip(reason)
    warehouse = tempfile.mkdtemp(prefix="ragtriage-spark-")
    session = get_session(
        "local[2]",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.warehouse.dir": warehouse,
            # tiny data: compiling the measures' large plans costs more than interpreting them
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
            "spark.sql.adaptive.enabled": "false",
            "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={warehouse} -Dderby.system.home={warehouse}",
        },
        app_name="ragtriage-tests",
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
