"""TUI latency as a person sees it: the app runs in an 80×24 tmux session and the pane is polled.

    python bench/tui_latency.py first-paint --db STORE --run RUN [--repeat 5]
    python bench/tui_latency.py case-move --db STORE --run RUN [--presses 20] [--gap 0.25]

``first-paint`` prints seconds from launching ``ragtriage tui`` until the overview's metric table header (mean,
median, p10) is on screen; ``case-move`` opens the Failures list, enters the first case and prints the time from
each ``n``/``p`` key until the status line shows the new position and the header a different query (``Q …``).
Set ``RAGTRIAGE_TUI_CACHE=off`` to time an overview without the summary ``ragtriage load`` precomputes. Needs
tmux. A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

RAGTRIAGE = str(Path(sys.executable).with_name("ragtriage"))


def tmux(*args: str) -> str:
    # its own tmux server (-L), so the benchmark never touches a person's sessions
    return subprocess.run(["tmux", "-L", "ragtriage-bench", *args], capture_output=True, text=True, check=False).stdout


def pane(session: str) -> list[str]:
    return tmux("capture-pane", "-p", "-t", session).splitlines()


def start(session: str, db: str, run: str) -> None:
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24", f"{RAGTRIAGE} tui --db {db} --run {run}")


def first_paint(db: str, run: str, repeat: int) -> list[float]:
    out = []
    for i in range(repeat):
        session = f"rtfp{i}"
        t = time.perf_counter()
        start(session, db, run)
        while not any(re.search(r"mean\s+median\s+p10", line) for line in pane(session)):
            if time.perf_counter() - t > 60:
                raise SystemExit("the metric table did not appear within 60 s")
            time.sleep(0.02)
        out.append(time.perf_counter() - t)
        tmux("kill-session", "-t", session)
        time.sleep(0.5)
    return out


def _query_line(lines: list[str]) -> str:
    return next((x for x in lines if x.startswith(" Q ")), "")  # the case screen's first header line


def case_move(db: str, run: str, presses: int, gap: float) -> list[float]:
    session = "rtcm"
    start(session, db, run)
    time.sleep(4)
    tmux("send-keys", "-t", session, "f")
    time.sleep(2)
    tmux("send-keys", "-t", session, "Enter")
    time.sleep(3)
    out = []
    for key in ["n"] * presses + ["p"] * presses:
        lines = pane(session)
        m = re.search(r"\((\d+)/(\d+)\)", lines[1])
        if m is None:
            raise SystemExit("not in a case detail view: " + lines[1])
        want = f"({int(m.group(1)) + (1 if key == 'n' else -1)}/{m.group(2)})"
        old = _query_line(lines)
        t = time.perf_counter()
        tmux("send-keys", "-t", session, key)
        while True:
            lines = pane(session)
            if want in lines[1] and _query_line(lines) not in ("", old):
                break
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(gap)
    tmux("kill-session", "-t", session)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("first-paint", "case-move"))
    ap.add_argument("--db", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--presses", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.25)
    a = ap.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    if a.what == "first-paint":
        secs = sorted(first_paint(a.db, a.run, a.repeat))
        shown = ", ".join(f"{s:.2f}" for s in secs)
        print(f"metric table on screen after {shown} s; median {statistics.median(secs):.2f} s")
    else:
        ms = sorted(case_move(a.db, a.run, a.presses, a.gap))
        p95 = ms[max(0, int(len(ms) * 0.95) - 1)]
        print(f"n={len(ms)} median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms")


if __name__ == "__main__":
    main()
