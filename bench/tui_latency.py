"""TUI latency as a person sees it: the app runs in a tmux session and the pane is polled.

    python bench/tui_latency.py first-paint --db STORE --run RUN [--repeat 5]
    python bench/tui_latency.py overview --db STORE --run RUN [--repeat 3]
    python bench/tui_latency.py case-open --db STORE --run RUN [--repeat 3]
    python bench/tui_latency.py slices --db STORE --run RUN [--repeat 3]
    python bench/tui_latency.py case-move --db STORE --run RUN [--presses 20] [--gap 0.25]
    python bench/tui_latency.py compare --db STORE --run RUN [--repeat 3]
    python bench/tui_latency.py all --db STORE --run RUN

``first-paint`` prints seconds from launching ``ragtriage tui`` (80×24) until the overview's metric table header
(mean, median, p10) is on screen. ``overview`` runs the app 80×120, so every section fits, and prints seconds until
the metric table and until the failures-per-category table are on screen. ``case-open`` opens the Failures list
(``f``) and prints the seconds until it is listed, then presses Enter and prints the milliseconds until the case
screen shows the first case's query: the first case a person opens. The list reads the case under its cursor
ahead as soon as it has its rows, so this times the case screen's mount and paint plus whatever of that read is
left; a second figure sends Down and Enter at once, opening a case the list has not read ahead (its read starts at
Enter, as for a person who moves and opens without pausing). ``slices`` presses
``s`` as soon as the metric table shows, and again in an app whose overview has drawn its slice bars, and prints
the milliseconds until the slice rows are listed. ``case-move``
opens the first failing case and prints the time from each ``n``/``p`` key until the status line shows the new
position and the header a different query (``Q …``). ``compare`` presses ``c`` as soon as the metric table
shows and prints the seconds until the N-run Compare lists its cases (every loaded run of the dataset against the
default baseline), then presses Enter and prints the milliseconds until the side-by-side case shows its lists.

Set ``RAGTRIAGE_TUI_CACHE=off`` to time an overview without the summary ``ragtriage load`` precomputes. The app
runs with this process's ``PYTHONPATH`` and ``RAGTRIAGE_*`` variables on a tmux server of its own. Needs tmux. A
benchmark, not a test: it prints figures, asserts nothing, and writes them to bench/results/tui-latency-<time>.json.
The app writes its notes file beside the store, so
give it a copy of a shared store.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from results_json import Recorder

RAGTRIAGE = str(Path(sys.executable).with_name("ragtriage"))
SOCKET = f"ragtriage-bench-{os.getpid()}"  # a server of its own: never a person's sessions, nor another bench's
TIMEOUT_S = 120.0
POLL_S = 0.005


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False).stdout


def pane(session: str) -> list[str]:
    return tmux("capture-pane", "-p", "-t", session).splitlines()


def start(session: str, db: str, run: str, size: tuple[int, int] = (80, 24)) -> None:
    """The app on a store in a new session."""
    launch(session, ["tui", "--db", db, "--run", run], size=size)


def launch(
    session: str,
    args: list[str],
    *,
    size: tuple[int, int] = (80, 24),
    env: dict[str, str] | None = None,
    exe: str = RAGTRIAGE,
) -> None:
    """``ragtriage ARGS`` (``exe``: another build's) in a new session; the environment is passed explicitly (a
    running tmux server keeps its own): this process's ``PYTHONPATH`` and ``RAGTRIAGE_*`` variables, then ``env``."""
    keep = {k: v for k, v in os.environ.items() if k == "PYTHONPATH" or k.startswith("RAGTRIAGE_")}
    keep.update(env or {})
    command = " ".join(["env", *(shlex.quote(f"{k}={v}") for k, v in keep.items()), exe, *map(shlex.quote, args)])
    tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), command)


def usage(session: str) -> tuple[float, float]:
    """(CPU seconds user+sys, peak RSS MiB) so far of the app in ``session`` (``env`` execs it: the pane's
    process is the app), read from /proc while it runs; a child still running is not counted."""
    pid = tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime (fields 14-17): the app's and its finished children's
    cpu = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    hwm = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return cpu, int(hwm.split()[1]) / 1024


def stop(session: str) -> None:
    tmux("kill-session", "-t", session)
    time.sleep(0.5)


def wait_for(session: str, seen: Callable[[list[str]], bool], what: str) -> float:
    """Seconds until ``seen`` holds for the pane."""
    t = time.perf_counter()
    while not seen(pane(session)):
        if time.perf_counter() - t > TIMEOUT_S:
            raise SystemExit(f"{what} did not appear within {TIMEOUT_S:.0f} s:\n" + "\n".join(pane(session)))
        time.sleep(POLL_S)
    return time.perf_counter() - t


def has(pattern: str) -> Callable[[list[str]], bool]:
    rx = re.compile(pattern)
    return lambda lines: any(rx.search(line) for line in lines)


METRIC_TABLE = has(r"mean\s+median\s+p10")
CATEGORIES = has(r"Failures per category")
LISTED = has(r"\d+ of \d+ cases")
SLICES_LISTED = has(r"\d+ of \d+ slices")
SLICE_BARS = has(r"^ Mean .* by ")
CASE_SHOWN = has(r"^ Q ")
COMPARED = has(r" vs .* │ \+\d+ / -\d+ / =\d+")  # the status line: wins / losses / ties of the open run
SIDE_BY_SIDE = has(r"Final lists side by side: runs \d+-\d+ of \d+")


def first_paint(db: str, run: str, repeat: int) -> list[float]:
    out = []
    for i in range(repeat):
        session = f"fp{i}"
        start(session, db, run)
        out.append(wait_for(session, METRIC_TABLE, "the metric table"))
        stop(session)
    return out


def overview(db: str, run: str, repeat: int) -> list[tuple[float, float]]:
    """(metric table, category counts) seconds, in a pane tall enough to show both."""
    out = []
    for i in range(repeat):
        session = f"ov{i}"
        t = time.perf_counter()
        start(session, db, run, (80, 120))
        wait_for(session, METRIC_TABLE, "the metric table")
        table = time.perf_counter() - t
        wait_for(session, CATEGORIES, "the failures per category")
        out.append((table, time.perf_counter() - t))
        stop(session)
    return out


def _list_then_enter(
    db: str,
    run: str,
    repeat: int,
    key: str,
    listed_when: Callable[[list[str]], bool],
    listed_what: str,
    opened_when: Callable[[list[str]], bool],
    opened_what: str,
    before_enter: tuple[str, ...] = (),
) -> list[tuple[float, float]]:
    """(seconds from ``key`` at the metric table to a list, milliseconds from Enter on it to the case), each in a
    new app, so nothing is fetched before. ``before_enter``: keys sent with Enter in one go (Down: a row the
    cursor only passes over, so the list has not read its case ahead)."""
    out = []
    for i in range(repeat):
        session = f"{key}{i}"
        start(session, db, run)
        wait_for(session, METRIC_TABLE, "the metric table")
        tmux("send-keys", "-t", session, key)
        listed = wait_for(session, listed_when, listed_what)
        tmux("send-keys", "-t", session, *before_enter, "Enter")
        opened = wait_for(session, opened_when, opened_what)
        out.append((listed, opened * 1000))
        stop(session)
    return out


def case_open(db: str, run: str, repeat: int, before_enter: tuple[str, ...] = ()) -> list[tuple[float, float]]:
    """(Failures list seconds, first case milliseconds): each in a new app, so nothing is fetched before."""
    return _list_then_enter(
        db, run, repeat, "f", LISTED, "the failures list", CASE_SHOWN, "the case screen", before_enter
    )


def slices(db: str, run: str, repeat: int, filled: bool) -> list[float]:
    """Milliseconds from `s` to the slice rows: pressed as soon as the metric table shows, or (``filled``) once
    the overview has drawn its slice bars (80×120, so the section is on screen)."""
    out = []
    for i in range(repeat):
        session = f"sl{i}"
        start(session, db, run, (80, 120) if filled else (80, 24))
        wait_for(session, SLICE_BARS if filled else METRIC_TABLE, "the overview")
        tmux("send-keys", "-t", session, "s")
        out.append(wait_for(session, SLICES_LISTED, "the slices") * 1000)
        stop(session)
    return out


def _query_line(lines: list[str]) -> str:
    return next((x for x in lines if x.startswith(" Q ")), "")  # the case screen's first header line


def moved(want: str, old: str) -> Callable[[list[str]], bool]:
    """The status line shows position ``want`` and the header a query other than ``old``."""
    return lambda lines: want in lines[1] and _query_line(lines) not in ("", old)


def case_move(db: str, run: str, presses: int, gap: float) -> list[float]:
    session = "cm"
    start(session, db, run)
    wait_for(session, METRIC_TABLE, "the metric table")
    tmux("send-keys", "-t", session, "f")
    wait_for(session, LISTED, "the failures list")
    tmux("send-keys", "-t", session, "Enter")
    wait_for(session, CASE_SHOWN, "the case screen")
    time.sleep(1.0)  # the neighbours' prefetch
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
        wait_for(session, moved(want, old), "the next case")
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(gap)
    stop(session)
    return out


def compare(db: str, run: str, repeat: int) -> list[tuple[float, float]]:
    """(Compare listed seconds, side-by-side case milliseconds), each in a new app: nothing fetched before."""
    return _list_then_enter(db, run, repeat, "c", COMPARED, "the compare list", SIDE_BY_SIDE, "the side-by-side case")


REC: Recorder | None = None


def say(label: str, values: list[float], unit: str, digits: int) -> None:
    """Print a figure's values and median, and record them."""
    print(f"{label} after {spread(values, unit, digits)}")
    if REC is not None:
        s = sorted(values)
        REC.add(name=label, unit=unit, median=statistics.median(s), min=s[0], max=s[-1], n=len(s))


def spread(values: list[float], unit: str, digits: int) -> str:
    values = sorted(values)
    shown = ", ".join(f"{v:.{digits}f}" for v in values)
    return f"{shown} {unit}; median {statistics.median(values):.{digits}f} {unit}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("first-paint", "overview", "case-open", "slices", "case-move", "compare", "all"))
    ap.add_argument("--db", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--presses", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.25)
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    a = ap.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    global REC
    params = {"what": a.what, "run": a.run, "repeat": a.repeat, "presses": a.presses, "gap": a.gap}
    REC = Recorder("tui-latency", params, shared=not a.quiet_machine)
    REC.note("The app in a tmux pane at 80x24 (overview: 80x120), polled until the figure's text is on screen.")
    todo = ("first-paint", "overview", "case-open", "slices", "case-move", "compare") if a.what == "all" else (a.what,)
    for what in todo:
        if what == "first-paint":
            say("first paint: metric table on screen", first_paint(a.db, a.run, a.repeat), "s", 2)
        elif what == "overview":
            both = overview(a.db, a.run, a.repeat)
            say("overview: metric table", [t for t, _ in both], "s", 2)
            say("overview: failures per category", [c for _, c in both], "s", 2)
        elif what == "case-open":
            both = case_open(a.db, a.run, a.repeat)
            say("case-open: failures list", [t for t, _ in both], "s", 2)
            say("case-open: first case", [c for _, c in both], "ms", 0)
            cold = case_open(a.db, a.run, a.repeat, ("Down",))
            say("case-open: second case, Down+Enter at once (not read ahead)", [c for _, c in cold], "ms", 0)
        elif what == "slices":
            say("slices: s at the metric table, listed", slices(a.db, a.run, a.repeat, False), "ms", 0)
            say("slices: s once the overview is filled, listed", slices(a.db, a.run, a.repeat, True), "ms", 0)
        elif what == "compare":
            both = compare(a.db, a.run, a.repeat)
            say("compare: N-run list", [t for t, _ in both], "s", 2)
            say("compare: side-by-side case", [c for _, c in both], "ms", 0)
        else:
            ms = sorted(case_move(a.db, a.run, a.presses, a.gap))
            p95 = ms[max(0, int(len(ms) * 0.95) - 1)]
            say("case-move: n/p", ms, "ms", 1)
            print(f"case-move: n={len(ms)} p95 {p95:.1f} ms, max {ms[-1]:.1f} ms")
    REC.write()


if __name__ == "__main__":
    main()
