"""Ctrl-C on a real `ragtriage record` process: exit 130, a valid partial run marked incomplete, and `--resume`
finishes it without asking the finished cases again."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.record_helpers import rows, write_dataset

RETRIEVER = """\
import time
from pathlib import Path

LOG = Path(__file__).with_name("calls.log")


def search(query, case_id):
    with LOG.open("a") as fh:
        fh.write(case_id + "\\n")
    time.sleep(0.05)
    i = int(query.split()[-1])
    return [{"document_id": f"d{i}", "chunk_id": f"d{i}#1", "score": 1.0}]
"""


@pytest.mark.slow
def test_ctrl_c_leaves_a_partial_run_that_resume_completes(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", n=60)
    (tmp_path / "slow_search.py").write_text(RETRIEVER)
    out = tmp_path / "run"
    exe = str(Path(sys.executable).with_name("ragtriage"))
    args = [exe, "record", "--dataset", str(ds), "--out", str(out), "--k", "3", "--concurrency", "2", "--no-progress"]
    args += ["--retriever", f"python:{tmp_path / 'slow_search.py'}:search"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / ".record-journal.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not journal.exists() or len(journal.read_text().splitlines()) < 6):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "continue with --resume" in err
    manifest = json.loads((out / "run.json").read_text())
    done = manifest["record"]["cases_recorded"]
    assert manifest["incomplete"] is True and 5 <= done < 60
    assert len(rows(out / "events.jsonl")) == done

    finished = {e["case_id"] for e in rows(out / "events.jsonl")}
    calls_before = len((tmp_path / "calls.log").read_text().split())
    resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "run.json").read_text())["incomplete"] is False
    assert [e["case_id"] for e in rows(out / "events.jsonl")] == [f"q{i:02d}" for i in range(1, 61)]
    asked_again = (tmp_path / "calls.log").read_text().split()[calls_before:]
    # One pre-flight request for a pending case, then each pending case once; no finished case is asked again.
    assert len(asked_again) == (60 - done) + 1
    assert not finished & set(asked_again)
