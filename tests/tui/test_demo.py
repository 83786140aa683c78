"""`ragtriage demo` as a user runs it: a real process on a terminal (a pty, 80×24) opens the run the README names
(hybrid-rerank against bm25) and leaves no temp folder behind, whether the user quits, the process is sent
SIGTERM, or the load fails."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.cli.tui import demo_runs
from ragtriage.sample import DEMO_BASELINE, DEMO_RUN

ANSI = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")


class Terminal:
    """``ragtriage demo`` on a pseudo-terminal of 80×24, its screen output read as text (escapes dropped)."""

    def __init__(self, tmp: Path) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {**os.environ, "TMPDIR": str(tmp), "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
        env.pop("NO_COLOR", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragtriage.cli", "demo"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=tmp,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = b""

    def read_until(self, text: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
            plain = ANSI.sub(b"", self.seen).decode("utf-8", "replace")
            if text in plain:
                return plain
        raise AssertionError(f"{text!r} never shown; last output: {ANSI.sub(b'', self.seen)[-2000:]!r}")

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:  # drained so the process never blocks writing to the terminal
                try:
                    os.read(self.master, 65536)
                except OSError:
                    time.sleep(0.1)
        code = self.proc.wait(timeout=5)
        os.close(self.master)
        return code


def left_behind(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("ragtriage-demo-"))


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_demo_opens_hybrid_rerank_against_bm25_and_removes_its_store_on_quit(tmp_path: Path) -> None:
    term = Terminal(tmp_path)
    try:
        term.read_until(f"run {DEMO_RUN}")
        assert len(left_behind(tmp_path)) == 1  # the store, while the demo runs
        term.send("c")
        term.read_until(f"{DEMO_RUN} vs {DEMO_BASELINE}")
        term.send("q")
        assert term.wait() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    assert left_behind(tmp_path) == []


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_demo_removes_its_store_on_sigterm(tmp_path: Path) -> None:
    term = Terminal(tmp_path)
    try:
        term.read_until(f"run {DEMO_RUN}")
        term.proc.send_signal(signal.SIGTERM)
        assert term.wait() == 128 + signal.SIGTERM
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    assert left_behind(tmp_path) == []


@pytest.mark.slow
def test_demo_removes_its_store_when_the_load_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sample = tmp_path / "sample"
    (sample / "dataset").mkdir(parents=True)
    (sample / "dataset" / "cases.jsonl").write_text('{"id": "q1", "query": \n', encoding="utf-8")
    (sample / "runs" / "r").mkdir(parents=True)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    result = CliRunner().invoke(app, ["demo", "--sample", str(sample)])
    assert result.exit_code == 2, result.output
    assert "loading" in result.output and "failed" in result.output
    assert left_behind(temp) == []


def test_demo_runs_fall_back_to_the_tui_default_without_the_readme_runs() -> None:
    assert demo_runs({"bm25", "dense", "hybrid-rerank"}, DEMO_RUN, DEMO_BASELINE) == ("hybrid-rerank", "bm25")
    assert demo_runs({"bm25", "dense"}, DEMO_RUN, DEMO_BASELINE) == (None, None)


def test_the_readme_names_the_demo_run() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    command = f"ragtriage tui --db triage.duckdb --run {DEMO_RUN} --baseline {DEMO_BASELINE}"
    # the line that gives the TUI's command names demo as the same thing
    assert any(command in line and "ragtriage demo" in line for line in readme.splitlines())
