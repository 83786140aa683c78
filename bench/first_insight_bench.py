"""Time to first insight: from TREC or Parquet files on disk to numbers, a store and the triage UI, beside trec_eval,
pytrec_eval, ir_measures and DuckDB's own read and write floors, in one interleaved run.

    python bench/first_insight_bench.py [--trec-eval PATH] [--trec-eval-upto 1M] [--sizes 1M,10M]
                                        [--shapes realistic,regular] [--repeat 3] [--dir /tmp/ragtriage-first-insight]
                                        [--quiet-machine] [--only WORDS] [--keep | --reuse] [--peer-src SRC]

``--trec-eval PATH``: a trec_eval binary you built from its public source (https://github.com/usnistgov/trec_eval,
``make``); this repository ships neither its code nor a recipe building it. Without it, trec_eval's rows say so and
the ratios against it are not computed. It runs at sizes up to ``--trec-eval-upto`` (default 1M, the only size a
bar compares with it: at 10M it takes minutes of CPU per round).

Data (bench/data_shapes.py, stated in the results file): ``realistic`` (uneven depth, document ids drawn from a
million, real-valued scores with ties, one list in 200 repeating a document) and ``regular`` (bench/scale_bench.py's
shape) at each size. trec_eval refuses a document listed twice, so it reads run-a without those lines (0.05% of
them); every other program reads the file as it is. The repeated judgments of the realistic shape are refused by
ragtriage and trec_eval alike (fail closed): the timed qrels hold none, and one row times ragtriage's refusal.

ragtriage's modules are byte-compiled first (bench/installed.py), as pip leaves an installed wheel's. Every command
is a whole process: wall seconds, CPU seconds (user+sys) and peak RSS from GNU time, the median of
``--repeat`` rounds; in each round every command runs once, in the same order (A B C A B C ...), so a busy minute
on the shared machine lands on all of them. Commands, each computing nDCG@10 from the files:

- trec_eval ``-m ndcg_cut.10``; pytrec_eval and ir_measures reading the TREC files in Python;
- DuckDB read floor: nDCG@10 in one query over the TREC text files (repeats dropped, trec_eval's tie order);
- DuckDB write floor: CREATE TABLE AS of cases, labels and run-a from their Parquet into a file database;
- ``ragtriage metrics --qrels Q --run R --measure nDCG@10`` (no store);
- ``ragtriage load --no-precompute`` of dataset + run-a into a new file store;
- ``ragtriage load`` (default) of the same, then ``ragtriage tui`` until the Overview's metric table is on screen
  (80x24 in tmux, bench/tui_latency.py): wall and CPU are the two processes' sums, the app's CPU and peak read
  from /proc at paint;
- ``ragtriage tui --qrels Q --run R`` with an empty cache folder, then again with the store it cached, when the
  build has the option (``--tui-ragtriage PATH``: another build's executable, e.g. a branch's venv).

``--peer-src SRC`` (a ``src`` folder of another ragtriage: ``git archive BASE src | tar -x -C /tmp/base``) adds
``peer ragtriage metrics --qrels --run``, that tree's one-off run by this interpreter right after this one's in
every round, so a change and its base are measured under the same load (the peer's modules byte-compiled too).

Prints the table and the issue's bars as ratios, and writes bench/results/first-insight-<time>.json, which
scripts/perf_doc.py renders into docs/performance.md. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import tui_latency as tui
from data_shapes import SHAPES, Layout, describe, generate
from installed import byte_compile
from results_json import Recorder
from scale_bench import GNU_TIME, IR_MEASURES, PYTREC, RAGTRIAGE, parse_size

PY = sys.executable

READ_FLOOR = """
import duckdb, sys
qrels, run = sys.argv[1], sys.argv[2]
print(duckdb.sql(f'''
WITH lab AS (SELECT * FROM read_csv('{qrels}', delim=' ', header=false,
                 columns={{'case_id': 'VARCHAR', 'it': 'VARCHAR', 'document_id': 'VARCHAR', 'grade': 'INTEGER'}})),
res AS (SELECT case_id, document_id, row_number() OVER (PARTITION BY case_id ORDER BY score DESC, document_id DESC)
               AS pos
        FROM read_csv('{run}', delim=' ', header=false,
                 columns={{'case_id': 'VARCHAR', 'q0': 'VARCHAR', 'document_id': 'VARCHAR', 'rank': 'INTEGER',
                          'score': 'DOUBLE', 'tag': 'VARCHAR'}})
        QUALIFY row_number() OVER (PARTITION BY case_id, document_id ORDER BY score DESC) = 1),
dcg AS (SELECT r.case_id, sum((pow(2, l.grade) - 1) / log2(r.pos + 1)) AS dcg
        FROM res r JOIN lab l USING (case_id, document_id) WHERE r.pos <= 10 AND l.grade >= 1 GROUP BY r.case_id),
ideal AS (SELECT case_id, sum((pow(2, grade) - 1) / log2(pos + 1)) AS idcg FROM (
          SELECT case_id, grade, row_number() OVER (PARTITION BY case_id ORDER BY grade DESC) AS pos
          FROM lab WHERE grade >= 1) WHERE pos <= 10 GROUP BY case_id)
SELECT avg(coalesce(dcg.dcg, 0) / idcg) FROM ideal LEFT JOIN dcg USING (case_id)''').fetchall()[0][0])
"""

# what the ``ragtriage`` console script runs, for a source tree put first on the path
PEER_MAIN = "import sys; from ragtriage.cli import main; sys.argv[0] = 'ragtriage'; sys.exit(main())"

WRITE_FLOOR = """
import duckdb, sys
root, db = sys.argv[1], sys.argv[2]
con = duckdb.connect(db)
con.execute(f"CREATE TABLE cases AS FROM '{root}/dataset/cases.parquet'")
con.execute(f"CREATE TABLE labels AS FROM '{root}/dataset/labels.parquet'")
con.execute(f"CREATE TABLE results AS FROM '{root}/run-a/results.parquet'")
con.close()
"""


@dataclass
class Figure:
    """One command's rounds: wall, CPU (user+sys) seconds and peak RSS MiB of each."""

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak: list[float] = field(default_factory=list)
    note: str = ""

    def add(self, wall: float, cpu: float, peak: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.peak.append(peak)

    @property
    def seconds(self) -> float | None:
        return statistics.median(self.wall) if self.wall else None

    @property
    def cpu_s(self) -> float | None:
        return statistics.median(self.cpu) if self.cpu else None

    @property
    def peak_mib(self) -> float | None:
        return max(self.peak) if self.peak else None


def timed(cmd: list[str], ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall s, CPU user+sys s, peak RSS MiB) of one whole process, from GNU time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        start = time.perf_counter()
        proc = subprocess.run(
            [GNU_TIME, "-f", "%U %S %M", "-o", out.name, *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        wall = time.perf_counter() - start
        if proc.returncode not in ok or b"Traceback (most recent call last)" in proc.stderr:
            last = proc.stderr.decode(errors="replace").strip().splitlines()[-3:] or [f"exit {proc.returncode}"]
            raise RuntimeError(" / ".join(last)[:300])
        user, sys_, rss = out.read().split()[-3:]
    return wall, float(user) + float(sys_), int(rss) / 1024


def first_paint(args: list[str], env: dict[str, str] | None = None, exe: str = RAGTRIAGE) -> tuple[float, float, float]:
    """(wall s to the Overview's metric table, the app's CPU s and peak MiB by then) of ``ragtriage ARGS``."""
    session = "fi"
    start = time.perf_counter()
    tui.launch(session, args, env=env, exe=exe)
    try:
        tui.wait_for(session, tui.METRIC_TABLE, "the Overview's metric table")
        wall = time.perf_counter() - start
        cpu, peak = tui.usage(session)
    finally:
        tui.stop(session)
    return wall, cpu, peak


def has_option(command: str, option: str, exe: str = RAGTRIAGE) -> bool:
    out = subprocess.run([exe, command, "--help"], capture_output=True, text=True, check=False).stdout
    return option in out


def commands(
    data: Layout, work: Path, trec_eval: Path | None, tui_exe: str, peer_src: Path | None = None
) -> dict[str, Callable[[], tuple[float, float, float]]]:
    """Each command of one round, by name, in the order a round runs them; ``tui_exe`` opens ``tui --qrels``;
    ``peer_src``: another tree's one-off beside this one's."""
    root, store = data.root, work / "store.duckdb"
    q, r = str(data.qrels), str(data.run)
    load = [RAGTRIAGE, "load", "--db", str(store), "--dataset", str(data.dataset), "--run", str(data.run_dir())]

    def fresh(cmd: list[str]) -> list[str]:
        """``cmd`` on a new store: the old one, its WAL and its notes removed first."""
        return ["sh", "-c", f'rm -f "{store}" "{store}".wal "{store}".notes.sqlite && exec "$@"', "sh", *cmd]

    def load_and_overview() -> tuple[float, float, float]:
        wall, cpu, peak = timed(fresh(load))
        w, c, p = first_paint(["tui", "--db", str(store), "--run", "run-a"])
        return wall + w, cpu + c, max(peak, p)

    cache = work / "cache"
    in_cache = {"XDG_CACHE_HOME": str(cache), "RAGTRIAGE_CACHE_DIR": str(cache)}

    def tui_files(cold: bool) -> tuple[float, float, float]:
        if cold:
            shutil.rmtree(cache, ignore_errors=True)
        return first_paint(["tui", "--qrels", q, "--run", r], env=in_cache, exe=tui_exe)

    out: dict[str, Callable[[], tuple[float, float, float]]] = {}
    if trec_eval is not None:
        te = [str(trec_eval), "-m", "ndcg_cut.10", q, str(data.unique_run)]
        out["trec_eval -m ndcg_cut.10"] = lambda: timed(te)
    out["pytrec_eval reading the TREC files"] = lambda: timed([PY, "-c", PYTREC, str(root)])
    out["ir_measures reading the TREC files"] = lambda: timed([PY, "-c", IR_MEASURES, str(root)])
    out["DuckDB read floor: nDCG@10 from the TREC files"] = lambda: timed([PY, "-c", READ_FLOOR, q, r])
    floor_db = work / "floor.duckdb"
    write = ["sh", "-c", f'rm -f "{floor_db}" && exec "$@"', "sh", PY, "-c", WRITE_FLOOR, str(root), str(floor_db)]
    out["DuckDB write floor: CREATE TABLE AS from Parquet"] = lambda: timed(write)
    metrics = [RAGTRIAGE, "metrics", "--qrels", q, "--run", r, "--measure", "nDCG@10"]
    out["ragtriage metrics --qrels --run"] = lambda: timed(metrics)
    if peer_src is not None:
        peer = [PY, "-c", PEER_MAIN, *metrics[1:]]
        in_peer = {**os.environ, "PYTHONPATH": str(peer_src)}
        out["peer ragtriage metrics --qrels --run"] = lambda: timed(peer, env=in_peer)
    if data.repeated_qrels is not None:
        refuse = [RAGTRIAGE, "metrics", "--qrels", str(data.repeated_qrels), "--run", r, "--measure", "nDCG@10"]
        out["ragtriage metrics refusing repeated judgments"] = lambda: timed(refuse, ok=(2,))
    out["ragtriage load --no-precompute"] = lambda: timed(fresh([*load, "--no-precompute"]))
    out["ragtriage load + TUI Overview painted"] = load_and_overview
    if has_option("tui", "--qrels", tui_exe):
        out["ragtriage tui --qrels --run first paint (cold cache)"] = lambda: tui_files(cold=True)
        out["ragtriage tui --qrels --run first paint (warm cache)"] = lambda: tui_files(cold=False)
    return out


#: The issue's bars: (size, label, numerator, numerator figure, denominator, denominator figure, limit).
BARS = [
    ("1M", "metrics --qrels --run CPU ÷ trec_eval CPU", "ragtriage metrics --qrels --run", "cpu_s",
     "trec_eval -m ndcg_cut.10", "cpu_s", 1.0),
    ("1M", "(peer) metrics --qrels --run CPU ÷ trec_eval CPU", "peer ragtriage metrics --qrels --run", "cpu_s",
     "trec_eval -m ndcg_cut.10", "cpu_s", 1.0),
    ("1M", "tui --qrels --run first paint ÷ trec_eval wall", "ragtriage tui --qrels --run first paint (cold cache)",
     "seconds", "trec_eval -m ndcg_cut.10", "seconds", 3.0),
    ("1M", "(stand-in) load + Overview painted ÷ trec_eval wall", "ragtriage load + TUI Overview painted", "seconds",
     "trec_eval -m ndcg_cut.10", "seconds", 3.0),
    ("10M", "metrics --qrels --run ÷ DuckDB TREC read", "ragtriage metrics --qrels --run", "seconds",
     "DuckDB read floor: nDCG@10 from the TREC files", "seconds", 2.0),
    ("10M", "load + Overview painted ÷ pytrec_eval", "ragtriage load + TUI Overview painted", "seconds",
     "pytrec_eval reading the TREC files", "seconds", 1.0),
    ("10M", "load --no-precompute ÷ write floor", "ragtriage load --no-precompute", "seconds",
     "DuckDB write floor: CREATE TABLE AS from Parquet", "seconds", 2.0),
]  # fmt: skip
PEAK_LIMIT_MIB = 1536.0  # "nothing above 1.5 GiB at 30M"


def bars(results: dict[tuple[str, str], list[Figure]]) -> list[dict[str, object]]:
    """Every bar that applies to a measured (size, shape), as a ratio of medians beside its limit."""
    rows: list[dict[str, object]] = []
    for (size, shape), figures in results.items():
        by = {f.name: f for f in figures}
        for at, label, num, num_fig, den, den_fig, limit in BARS:
            if size.upper() != at or num not in by or den not in by:
                continue
            a, b = getattr(by[num], num_fig), getattr(by[den], den_fig)
            if a is None or not b:
                continue
            rows.append({"rows": size, "shape": shape, "bar": label, "ratio": a / b, "limit": limit,
                         "met": a / b <= limit})  # fmt: skip
        if size.upper() == "30M":
            ours = [f for f in figures if f.name.startswith("ragtriage") and f.peak_mib]
            if not ours:
                continue
            worst = max(ours, key=lambda f: f.peak_mib or 0)
            rows.append({"rows": size, "shape": shape, "bar": f"peak MiB ({worst.name})", "ratio": worst.peak_mib,
                         "limit": PEAK_LIMIT_MIB, "met": (worst.peak_mib or 0) <= PEAK_LIMIT_MIB})  # fmt: skip
    return rows


def measure(
    data: Layout,
    work: Path,
    trec_eval: Path | None,
    tui_exe: str,
    repeat: int,
    figures: list[Figure],
    save: Callable[[], None],
    only: list[str] | None = None,
    peer_src: Path | None = None,
) -> None:
    """``repeat`` rounds of every command into ``figures``; ``save`` after each round. ``only``: the commands whose
    name holds one of these words (case-insensitive), e.g. ``write floor`` and ``no-precompute``."""
    todo = commands(data, work, trec_eval, tui_exe, peer_src)
    if only:
        todo = {name: run for name, run in todo.items() if any(w.lower() in name.lower() for w in only)}
    by_name = {name: Figure(name) for name in todo}
    figures += by_name.values()
    for round_ in range(repeat):
        for name, run in todo.items():
            fig = by_name[name]
            if fig.note:
                continue  # failed in an earlier round: not retried
            try:
                fig.add(*run())
            except (RuntimeError, SystemExit) as exc:
                fig.note = f"failed: {exc}"
            w, c, p = (fig.wall[-1], fig.cpu[-1], fig.peak[-1]) if fig.wall and not fig.note else (0, 0, 0)
            print(f"  [{round_ + 1}/{repeat}] {name:52s} {w:7.2f} s wall {c:7.2f} s CPU {p:7.0f} MiB {fig.note}")
        save()


def table(results: dict[tuple[str, str], list[Figure]]) -> str:
    keys = list(results)
    lines = ["| command | " + " | ".join(f"{s} {sh}" for s, sh in keys) + " |", "|---|" + "---|" * len(keys)]
    for name in dict.fromkeys(f.name for figs in results.values() for f in figs):
        cells = []
        for key in keys:
            fig = next((f for f in results[key] if f.name == name), None)
            if fig is None or fig.seconds is None:
                cells.append(fig.note[:60] if fig else "not run")
            else:
                cells.append(f"{fig.seconds:.2f} s, CPU {fig.cpu_s:.2f} s, {fig.peak_mib:.0f} MiB")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reused(root: Path, shape: str) -> Layout | None:
    """The layout a run with ``--keep`` left under ``root`` (the generator writes the same bytes for the same size
    and shape), or None when it is not complete."""
    import duckdb

    data = Layout(root, shape, 0, 0, 0)
    needed = [data.qrels, data.run, data.dataset / "cases.parquet", data.run_dir() / "results.parquet"]
    if not all(p.exists() for p in needed):
        return None
    counts = duckdb.sql(f"""SELECT (SELECT count(*) FROM '{data.run_dir() / "results.parquet"}'),
                                   (SELECT count(*) FROM '{data.dataset / "labels.parquet"}'),
                                   (SELECT count(*) FROM '{data.dataset / "cases.parquet"}')""").fetchall()[0]
    return Layout(root, shape, int(counts[0]), int(counts[1]), int(counts[2]))


def kept_figures(path: Path | None, rec: Recorder, measured: set[tuple[str, str]]) -> list[dict[str, object]]:
    """The rows of an earlier results file for the (size, shape) pairs this run does not measure, its bars
    included, with a note saying where and under what load they were measured."""
    if path is None:
        return []
    doc = json.loads(path.read_text(encoding="utf-8"))
    rows = [f for f in doc["figures"] if (f.get("rows"), f.get("shape")) not in measured]
    pairs = sorted({f"{f['rows']} {f['shape']}" for f in rows})
    load = doc["machine"]["load_average_before"][0], doc["machine"]["load_average_after"][0]
    rec.note(f"{', '.join(pairs)}: from {path.name} (`{doc['command']}`, {doc['date']}, load {load[0]} / {load[1]}).")
    rec.params["kept_from"] = path.name
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--trec-eval", type=Path, help="a trec_eval binary you built (not shipped here)")
    ap.add_argument(
        "--tui-ragtriage", help="the ragtriage executable whose `tui --qrels --run` is timed (default: this one)"
    )
    ap.add_argument("--trec-eval-upto", default="1M", help="the largest size trec_eval runs at")
    ap.add_argument("--sizes", default="1M,10M", help="result rows per run, comma-separated (200K, 1M, 10M, 30M)")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="data shapes, comma-separated (realistic, regular)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-first-insight"))
    ap.add_argument("--keep-from", type=Path, help="an earlier first-insight results file: its other sizes/shapes")
    ap.add_argument("--keep", action="store_true", help="keep the generated files (they are large)")
    ap.add_argument(
        "--reuse", action="store_true", help="read the files a run with --keep left under --dir (kept again)"
    )
    ap.add_argument("--peer-src", type=Path, help="src folder of another ragtriage whose one-off runs beside this one")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    ap.add_argument(
        "--only",
        help="run only the commands whose name holds one of these comma-separated words "
        "(e.g. 'write floor,no-precompute' for item 4's bar)",
    )
    a = ap.parse_args()
    only = [w.strip() for w in a.only.split(",") if w.strip()] if a.only else None
    if shutil.which("tmux") is None or not Path(GNU_TIME).exists():
        raise SystemExit("needs tmux and GNU time (Debian packages tmux, time)")
    trec_eval = a.trec_eval if a.trec_eval and a.trec_eval.exists() else None
    shapes = [s.strip() for s in a.shapes.split(",")]
    params = {
        "sizes": a.sizes,
        "shapes": ",".join(shapes),
        "repeat": a.repeat,
        "measure": "nDCG@10",
        "only": a.only,
        "peer_src": str(a.peer_src) if a.peer_src else None,
    }
    # a subset is recorded apart, so docs/performance.md keeps showing the newest full table
    rec = Recorder("first-insight-subset" if only else "first-insight", params, shared=not a.quiet_machine)
    rec.note("Whole processes; s = median wall, CPU = median user+sys, peak MiB = largest RSS over the rounds.")
    rec.note("Interleaved: each round runs every command once, in the table's order; ratios are of medians.")
    if trec_eval is None:
        rec.note("trec_eval: not measured (no --trec-eval PATH given or the path does not exist).")
    else:
        rec.note(
            "trec_eval built by the user from usnistgov/trec_eval; it reads run-a without repeated documents; "
            f"run at sizes up to {a.trec_eval_upto}."
        )
    tui_exe = a.tui_ragtriage or RAGTRIAGE
    for exe in dict.fromkeys([RAGTRIAGE, tui_exe]):
        rec.note(byte_compile(exe))
    if a.peer_src:
        compileall.compile_dir(a.peer_src / "ragtriage", quiet=1)
        rec.note(f"peer: the one-off of {a.peer_src} (byte-compiled), run by this interpreter after this one's.")
    if not has_option("tui", "--qrels", tui_exe):
        rec.note("`ragtriage tui --qrels --run` is not in this build: load + tui stands in for its first paint.")
    elif tui_exe != RAGTRIAGE:
        built = subprocess.run([tui_exe, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        rec.note(f"`tui --qrels --run` timed with another build: {tui_exe} ({built}); every other row with this one.")
    for shape in shapes:
        rec.note(describe(shape))
    results: dict[tuple[str, str], list[Figure]] = {}
    data_rows: list[dict[str, object]] = []
    kept = kept_figures(a.keep_from, rec, {(s.strip(), sh) for s in a.sizes.split(",") for sh in shapes})

    def save() -> None:
        """The results file as it stands (rewritten after every round: a run stopped later keeps its rounds)."""
        rec.figures = [*kept, *data_rows]
        for (size, shape), figures in results.items():
            for f in figures:
                rec.add(rows=size, shape=shape, name=f.name, seconds=f.seconds, cpu_s=f.cpu_s, peak_mib=f.peak_mib,
                        rounds=len(f.wall), note=f.note)  # fmt: skip
        for row in bars(results):
            rec.add(name="bar", **row)
        rec.write()

    for size in (s.strip() for s in a.sizes.split(",")):
        for shape in shapes:
            root = a.dir / f"{shape}-{size}"
            data = reused(root, shape) if a.reuse else None
            if data is None:
                shutil.rmtree(root, ignore_errors=True)
                t = time.perf_counter()
                data = generate(root, parse_size(size), shape)
                print(f"{size} {shape}: {data.summary()} generated in {time.perf_counter() - t:.0f} s under {root}")
            data_rows.append({"rows": size, "shape": shape, "name": "data", **data.summary()})
            work = root / "work"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            upto = parse_size(size) <= parse_size(a.trec_eval_upto)
            results[(size, shape)] = []
            figs = results[(size, shape)]
            measure(data, work, trec_eval if upto else None, tui_exe, a.repeat, figs, save, only, a.peer_src)
            if not (a.keep or a.reuse):
                shutil.rmtree(root, ignore_errors=True)
    print("\n" + table(results) + "\n\n| size | shape | bar | ratio | limit | met |\n|---|---|---|---|---|---|")
    for row in bars(results):
        print(f"| {row['rows']} | {row['shape']} | {row['bar']} | {row['ratio']:.2f} | {row['limit']} | {row['met']} |")


if __name__ == "__main__":
    main()
