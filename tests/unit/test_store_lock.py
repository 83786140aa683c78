"""A shared store: while another process holds it (a load writing), every command says so in one line and
exits 2, ``--wait`` waits for the lock, and short-lived reads leave the store free between them. Real processes
hold the lock: DuckDB's lock is between processes, never within one."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.store import StoreLocked, connect, reading
from ragtriage.store.connection import process_label
from tests.factory import make_store

runner = CliRunner()
# Holds a write connection until its stdin closes. The trailing "ragtriage load" words make /proc/PID/cmdline
# read like a `ragtriage load`, which is what the message names.
HOLD = "import sys, duckdb; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); sys.stdin.read(); c.close()"
CLI = "import sys; from ragtriage.cli import main; sys.argv[0] = 'ragtriage'; main()"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    make_store(
        tmp_path,
        cases=[{"id": "q1", "query": "x", "principal": {"id": "u", "groups": ["g"]}}],
        labels=[{"case_id": "q1", "document_id": "d1", "chunk_id": "c1", "grade": 3}],
        documents=[{"document_id": "d1", "chunk_id": "c1", "acl": ["g"]}],
        runs=[{"run": {"run_id": "r", "k": 1}, "results": [{"case_id": "q1", "document_id": "d1", "chunk_id": "c1"}]}],
    ).close()
    return tmp_path / "store.duckdb"


@pytest.fixture
def holder(db: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db), "ragtriage", "load"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc
    if proc.poll() is None:
        proc.communicate("", timeout=30)


def test_the_holder_is_named_by_its_command(holder: subprocess.Popen[str]) -> None:
    assert process_label(holder.pid) == "load"


def test_connect_raises_store_locked_with_pid(db: Path, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(StoreLocked) as info:
        connect(db, read_only=True)
    assert info.value.pid == holder.pid
    assert str(info.value) == f"{db}: store in use by PID {holder.pid} (load); retry or pass --wait"


@pytest.mark.parametrize(
    "args",
    [
        ["info"],
        ["check", "--run", "r"],
        ["metrics", "--run", "r"],
        ["failures", "--run", "r"],
        ["compare", "--run", "r", "--baseline", "r"],
        ["agreement"],
        ["export-notes", "--csv", "{tmp}/n.csv"],
        ["pool", "--runs", "r", "--out", "{tmp}/p.csv"],
        ["tui"],
        ["load", "--run", "{tmp}/run0", "--replace"],
    ],
)
@pytest.mark.slow
def test_every_command_says_so_in_one_line(db: Path, holder: subprocess.Popen[str], args: list[str]) -> None:
    res = runner.invoke(app, [a.format(tmp=db.parent) for a in args] + ["--db", str(db)])
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit)
    assert res.output.strip().splitlines() == [f"{db}: store in use by PID {holder.pid} (load); retry or pass --wait"]


@pytest.mark.slow
def test_wait_waits_for_the_lock_in_a_real_process(db: Path, holder: subprocess.Popen[str]) -> None:
    waiter = subprocess.Popen(
        [sys.executable, "-c", CLI, "--wait", "info", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.5)
    assert waiter.poll() is None  # still waiting while the holder writes
    holder.communicate("", timeout=30)
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert "Traceback" not in err and "│ r " in out


@pytest.mark.slow
def test_without_wait_a_real_process_fails_in_one_line(db: Path, holder: subprocess.Popen[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "info", "--db", str(db)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"{db}: store in use by PID {holder.pid} (load); retry or pass --wait"]


def test_short_lived_reads_leave_the_store_free_for_a_writer(db: Path) -> None:
    with reading(db) as con:
        assert con.execute("SELECT run_id FROM runs").fetchall() == [("r",)]
    # between reads nothing holds the store: a writer in another process goes through
    proc = subprocess.run([sys.executable, "-c", HOLD, str(db)], input="", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ready", proc.stderr
    with reading(db) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]
