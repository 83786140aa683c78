"""Peak memory of every user-facing command at one size, beside the issue's bar (nothing above 1.5 GiB at 30M).

    nice -n 10 python bench/memory_bench.py [--size 30M] [--dir /tmp/ragtriage-memory] [--reuse]
                                            [--only NAME,NAME] [--quiet-machine] [--shape realistic|chunks]

Data: bench/data_shapes.py's realistic shape (uneven depth, document ids drawn from a million, real-valued scores
with ties, one list in 200 repeating a document), generated once under ``--dir`` (``--reuse`` keeps the files of an
earlier run of the same size and shape there; they are large: ~5 GB at 30M). ``--shape chunks`` is a document-unit
dataset loaded from chunk-level runs, where almost every list repeats a document (the lists ``pool`` and the
metrics number by windows); the results file states the shape, and docs/performance.md shows the newest file of
each shape. Every command is a whole process started in the
order below; its peak is its maximum resident set size from GNU time (``%M``), except the TUI's, which is the
app's high-water mark (``VmHWM`` in /proc) when the Overview's metric table is on screen (80x24 in tmux,
bench/tui_latency.py). The rows:

- ``metrics --qrels Q --run R`` (the one-off evaluation from the TREC files, every default measure);
- ``load --no-precompute``, ``load`` (default) and ``load --wait-classified``, each of the dataset and two runs
  into a new store; ``classify`` on the store the default load wrote (which the commands below then read);
- on that store: ``metrics --run run-a``, ``check``, ``failures --summary``, ``compare --run run-b --baseline
  run-a``, ``report --markdown``, ``gate`` (a regression, a zero-hit and a critical-cases rule; the bench data has
  no principal, so the leakage rule fails: exit 1), the same gate writing ``--json`` and then ``--markdown`` (every
  failing case of every rule), ``pool --runs run-a,run-b``;
- ``tui --db STORE`` until the Overview is painted, and ``tui --qrels Q --run R`` with an empty cache folder (it
  loads the files first) until the same.

Peak memory does not depend on the CPU other processes use, so one round is enough and the bench can run niced
on a shared machine; wall and CPU seconds are printed as well, for scale only. Prints every command's peak beside
the bar and writes bench/results/memory-<time>.json (bench/results_json.py), which scripts/perf_doc.py renders into
docs/performance.md. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import tui_latency as tui
from data_shapes import Layout, describe, generate
from first_insight_bench import PEAK_LIMIT_MIB, first_paint, timed
from results_json import Recorder
from scale_bench import GNU_TIME, RAGTRIAGE, parse_size

GATE = """[gate]
name = "memory-bench"
split = "all"
n_resamples = 1000

[[regression]]
metric = "nDCG@10"
tolerance = 0.02
require_significance = true

[zero_hit]
k = 10
max_rate = 0.5

[critical_cases]
metric = "R@10"
min = 1.0
"""

Measure = Callable[[], tuple[float, float, float]]


def data(root: Path, size: str, reuse: bool, shape: str = "realistic") -> Layout:
    """The data of ``size`` and ``shape`` under ``root``: generated, or an earlier run's when ``reuse`` finds it."""
    stamp = root / "layout.json"
    if reuse and stamp.exists():
        known = json.loads(stamp.read_text())
        if known.get("size") == size and known.get("shape") == shape:
            return Layout(root, known["shape"], known["run_lines"], known["qrels_lines"], known["cases"])
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    layout = generate(root, parse_size(size), shape)
    print(f"{size}: {layout.summary()} generated in {time.perf_counter() - t:.0f} s under {root}")
    stamp.write_text(json.dumps({"size": size, **layout.summary()}))
    return layout


def commands(layout: Layout, work: Path) -> dict[str, Measure]:
    """Each command by name, in the order they run (the default load's store is read by the ones after it)."""
    store, scratch = work / "store.duckdb", work / "scratch.duckdb"
    q, r = str(layout.qrels), str(layout.run)
    runs = ["--run", str(layout.run_dir("run-a")), "--run", str(layout.run_dir("run-b"))]

    def fresh(db: Path, *extra: str) -> list[str]:
        """``load`` of the dataset and both runs into ``db``, removed (with its WAL and notes) first."""
        load = [RAGTRIAGE, "load", "--db", str(db), "--dataset", str(layout.dataset), *runs, *extra]
        return ["sh", "-c", f'rm -rf "{db}" "{db}".wal "{db}".notes.sqlite "{db}".tmp && exec "$@"', "sh", *load]

    def on_store(*args: str, ok: tuple[int, ...] = (0,)) -> Measure:
        return lambda: timed([RAGTRIAGE, *args, "--db", str(store)], ok=ok)

    def drop_scratch() -> None:
        for p in (scratch, Path(f"{scratch}.wal"), Path(f"{scratch}.notes.sqlite")):
            p.unlink(missing_ok=True)

    def scratch_load(*extra: str) -> Measure:
        def run() -> tuple[float, float, float]:
            try:
                return timed(fresh(scratch, *extra))
            finally:
                drop_scratch()  # two 30M-row stores at once would double the disk this bench needs

        return run

    cache = work / "cache"

    def tui_files() -> tuple[float, float, float]:
        shutil.rmtree(cache, ignore_errors=True)
        env = {"XDG_CACHE_HOME": str(cache), "RAGTRIAGE_CACHE_DIR": str(cache)}
        try:
            return first_paint(["tui", "--qrels", q, "--run", r], env=env)
        finally:
            shutil.rmtree(cache, ignore_errors=True)

    gate = work / "gate.toml"
    gate.write_text(GATE)
    out = work / "out"
    out.mkdir(exist_ok=True)
    gate_args = ("gate", "--gate", str(gate), "--run", "run-b", "--baseline", "run-a", "--no-record")
    return {
        "metrics --qrels --run (one-off, no store)": lambda: timed([RAGTRIAGE, "metrics", "--qrels", q, "--run", r]),
        "load --no-precompute (dataset + 2 runs)": scratch_load("--no-precompute"),
        "load (default; dataset + 2 runs)": lambda: timed(fresh(store)),
        "classify (the default load's store)": lambda: timed([RAGTRIAGE, "classify", "--db", str(store)]),
        "load --wait-classified (dataset + 2 runs)": scratch_load("--wait-classified"),
        "metrics --run run-a (store)": on_store("metrics", "--run", "run-a"),
        "check --run run-a": on_store("check", "--run", "run-a", ok=(0, 1, 3)),
        "failures --run run-a --summary": on_store("failures", "--run", "run-a", "--summary"),
        "compare --run run-b --baseline run-a": on_store("compare", "--run", "run-b", "--baseline", "run-a"),
        "report --runs run-a,run-b --markdown": on_store(
            "report", "--runs", "run-a,run-b", "--baseline", "run-a", "--markdown", str(out / "report.md"), "--force"
        ),
        "gate --run run-b --baseline run-a": on_store(*gate_args, ok=(0, 1)),
        "gate --run run-b --baseline run-a --json FILE": on_store(
            *gate_args, "--json", str(out / "gate.json"), "--force", ok=(0, 1)
        ),
        "gate --run run-b --baseline run-a --markdown FILE": on_store(
            *gate_args, "--markdown", str(out / "gate.md"), "--force", ok=(0, 1)
        ),
        "pool --runs run-a,run-b": on_store("pool", "--runs", "run-a,run-b", "--out", str(out / "pool.csv"), "--force"),
        "tui --db STORE: Overview painted": lambda: first_paint(["tui", "--db", str(store), "--run", "run-a"]),
        "tui --qrels --run (cold cache): Overview painted": tui_files,
    }


def kept_rows(path: Path | None, rec: Recorder, measured: set[str]) -> None:
    """The command rows of an earlier results file that this run does not measure, added to ``rec`` in their
    order, with a note saying which file (and build, date and load) they come from."""
    if path is None:
        return
    doc = json.loads(path.read_text(encoding="utf-8"))
    rows = [f for f in doc["figures"] if f["name"] != "data" and f["name"] not in measured]
    load = doc["machine"]["load_average_before"][0], doc["machine"]["load_average_after"][0]
    names = ", ".join(str(f["name"]) for f in rows)
    rec.note(f"{names}: from {path.name} (`{doc['command']}`, {doc['date']}, load {load[0]} / {load[1]}).")
    rec.params["kept_from"] = path.name
    for earlier in doc["notes"]:  # rows that file kept from a file before it say so there
        if ": from memory-" in earlier and any(str(f["name"]) in earlier for f in rows):
            rec.note(earlier)
    for f in rows:
        rec.add(**f)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", default="30M", help="result rows per run (200K, 1M, 10M, 30M)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-memory"))
    ap.add_argument("--reuse", action="store_true", help="reuse the data an earlier run of this size left in --dir")
    ap.add_argument("--only", help="run only these commands (comma-separated prefixes of the row names)")
    ap.add_argument("--keep-from", type=Path, help="an earlier memory results file: its rows this run does not measure")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    ap.add_argument("--shape", choices=("realistic", "chunks"), default="realistic", help="bench/data_shapes.py")
    a = ap.parse_args()
    if shutil.which("tmux") is None or not Path(GNU_TIME).exists():
        raise SystemExit("needs tmux and GNU time (Debian packages tmux, time)")
    tui.TIMEOUT_S = 1800.0  # a cold `tui --qrels --run` loads the whole run before its first paint
    params = {"size": a.size, "shape": a.shape, "limit_mib": PEAK_LIMIT_MIB}
    rec = Recorder("memory", params, shared=not a.quiet_machine)
    rec.note("Peak = maximum RSS of the whole process (GNU time %M); the TUI's = VmHWM when the Overview is painted.")
    rec.note("One round (peak memory does not depend on the machine's load); seconds are wall and CPU, for scale only.")
    rec.note(describe(a.shape))
    layout = data(a.dir / "data", a.size, a.reuse, a.shape)
    rec.add(name="data", **layout.summary())
    work = a.dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    todo = commands(layout, work)
    order = {name: i for i, name in enumerate(["data", *todo])}
    if a.only:
        wanted = [p.strip() for p in a.only.split(",")]
        todo = {n: m for n, m in todo.items() if any(n.startswith(w) for w in wanted)}
    kept_rows(a.keep_from, rec, set(todo))
    version = subprocess.run([RAGTRIAGE, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    rec.params["ragtriage_build"] = version
    for name, run in todo.items():
        rec.figures = [f for f in rec.figures if f["name"] != name]  # a kept row this run measures again
        try:
            wall, cpu, peak = run()
            note = ""
        except (RuntimeError, SystemExit) as exc:
            wall = cpu = peak = None
            note = f"failed: {exc}"[:300]
        over = peak is not None and peak > PEAK_LIMIT_MIB
        rec.add(name=name, peak_mib=peak, limit_mib=PEAK_LIMIT_MIB, met=None if peak is None else not over,
                seconds=wall, cpu_s=cpu, note=note)  # fmt: skip
        shown = "failed" if peak is None else f"{peak:7.0f} MiB {'OVER' if over else 'ok  '}"
        print(f"  {name:50s} {shown}  ({wall or 0:.0f} s wall, {cpu or 0:.0f} s CPU) {note}", flush=True)
        rec.figures.sort(key=lambda f: order.get(f["name"], len(order)))
        rec.write()
    shutil.rmtree(work / "out", ignore_errors=True)


if __name__ == "__main__":
    main()
