"""The SparkSession the Spark engine runs on: a local one by default, a cluster's with ``--spark-master``, or a
Spark Connect server when ``SPARK_REMOTE`` is set (the variable every Spark client reads).

pyspark is an optional extra and classic Spark needs a Java runtime; both are checked before a session is built,
so a machine without them gets one line saying what to install (``SparkUnavailable``, exit 2 in the CLI) rather
than a Java gateway traceback.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The master of a session built here when none is given: two local cores, enough to exercise a shuffle.
DEFAULT_MASTER = "local[2]"

INSTALL_HINT = "install it with `pip install 'ragtriage[spark]'`"
JAVA_HINT = (
    "Spark needs a Java 17+ runtime: install one (Debian: `apt-get install openjdk-17-jre-headless`) "
    "or set JAVA_HOME, or point SPARK_REMOTE at a Spark Connect server"
)

# Settings for a session this module builds: Spark's log at ERROR (its INFO/WARN lines would bury the figures), no
# web UI (a port per process, nothing to look at in a batch job),
# shuffle partitions sized to the local cores rather than Spark's default of 200 tiny tasks.
_LOCAL_CONF: Mapping[str, str] = {
    "spark.log.level": "ERROR",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


class SparkUnavailable(Exception):
    """pyspark or the Java runtime classic Spark needs is missing: the message says what to install."""


def pyspark_missing() -> str | None:
    """Why the Spark engine cannot start on this machine (pyspark or Java absent), or None when it can."""
    missing = [m for m in ("pyspark", "sqlglot") if importlib.util.find_spec(m) is None]
    if missing:
        return f"the Spark engine needs {' and '.join(missing)}: {INSTALL_HINT}"
    if os.environ.get("SPARK_REMOTE"):
        return None
    if not _java_found():
        return f"no Java runtime found: {JAVA_HINT}"
    return None


def _java_found() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return True
    return shutil.which("java") is not None


def get_session(
    master: str | None = None, *, conf: Mapping[str, str] | None = None, app_name: str = "ragtriage"
) -> SparkSession:
    """The active SparkSession when there is one (a notebook's, a job's); otherwise a new one.

    ``SPARK_REMOTE`` set: a Spark Connect session to that server (``master`` must then be unset). Otherwise a
    classic session on ``master`` (``local[2]`` by default; ``spark://``, ``yarn``, ``k8s://`` for a cluster).
    ``conf`` adds or overrides settings of a session built here; an existing session is returned as it is.
    Raises ``SparkUnavailable`` when pyspark or Java is missing.
    """
    reason = pyspark_missing()
    if reason:
        raise SparkUnavailable(reason)
    from pyspark.sql import SparkSession

    remote = os.environ.get("SPARK_REMOTE")
    if remote and master:
        raise SparkUnavailable(f"both --spark-master {master} and SPARK_REMOTE={remote} are set: unset one")
    if remote:
        return _connect_session(remote, app_name)
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    builder = SparkSession.builder.appName(app_name)
    settings = dict(conf or {})
    if master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        # a spark-submit job before its session exists: the JVM was started with the job's master and conf,
        # which a master or local settings of ours would override
        where = "under spark-submit"
    else:
        master = master or DEFAULT_MASTER
        if master.startswith("local"):
            # a local session talks to itself: bind the loopback (and skip Spark's warning about the host's name)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder, settings, where = builder.master(master), {**_LOCAL_CONF, **settings}, f"on master {master}"
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # pyspark raises its own runtime errors when the JVM does not start
        raise SparkUnavailable(f"Spark did not start {where}: {_first_line(exc)}") from exc


def _connect_session(remote: str, app_name: str) -> SparkSession:
    from pyspark.sql import SparkSession

    try:
        return SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    except ImportError as exc:  # the Connect client needs grpcio and pandas, pyspark's `connect` extra
        raise SparkUnavailable(
            f"SPARK_REMOTE is set but the Spark Connect client is missing ({exc}): install `pyspark[connect]`"
        ) from exc
    except Exception as exc:
        raise SparkUnavailable(f"no Spark Connect session at {remote}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
