"""Scale benchmark: every command as a whole process at 1M/10M/30M result rows, beside its peers and the floor.

    python bench/scale_bench.py [--sizes 1M,10M,30M] [--shape realistic|regular] [--repeat 3]
                                [--dir /tmp/ragtriage-scale] [--markdown out.md] [--quiet-machine]

For each size it generates about N cases x 100 results in ``--shape`` (bench/data_shapes.py: ``realistic``, the
default, has uneven depth, document ids drawn from a million, real-valued scores and repeated documents;
``regular`` is 100 results and 5 labels per case, ids d0, d2, ...) as Parquet (the contract's form) and as TREC
text (what pytrec_eval, ir_measures and trec_eval users hold), then times, each in its own process:

- ``ragtriage load`` (dataset + two runs) into a store, and ``load --wait-classified`` (the classification stored
  before it returns), and the store-backed commands on the latter: ``metrics --k 10``,
  ``check``, ``failures --summary``, ``compare``;
- the store-less one-off evaluation ``ragtriage metrics --qrels F --run F --measure nDCG@10`` (skipped with a note
  when this build has no such option);
- pytrec_eval and ir_measures reading the same TREC files in Python, as their users do;
- the floor: one DuckDB query over the same Parquet computing mean nDCG@10.

Every figure is the median of ``--repeat`` runs; peak memory is the process's maximum RSS (GNU time's ``%M``).
It prints a Markdown table with the ratios against the floor and against pytrec_eval, and writes every figure to
bench/results/scale-<time>.json (bench/results_json.py), from which scripts/perf_doc.py renders
docs/performance.md. A benchmark, not a test: on a shared machine quote medians and ratios, not single times
(``--quiet-machine`` records that nothing else ran).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from data_shapes import SHAPES, THRESHOLD, describe, generate
from results_json import Recorder

RAGTRIAGE = str(Path(sys.executable).with_name("ragtriage"))
GNU_TIME = "/usr/bin/time"  # Debian package `time`


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


FLOOR = """
import duckdb, sys
root = sys.argv[1]
print(duckdb.sql(f'''
WITH lab AS (SELECT case_id, document_id, grade FROM '{root}/dataset/labels.parquet'),
res AS (SELECT case_id, document_id, rank FROM '{root}/run-a/results.parquet' WHERE rank <= 10),
dcg AS (SELECT r.case_id, sum((pow(2, l.grade) - 1) / log2(r.rank + 1)) AS dcg
        FROM res r JOIN lab l USING (case_id, document_id) WHERE l.grade >= {THRESHOLD} GROUP BY r.case_id),
ideal AS (SELECT case_id, sum((pow(2, grade) - 1) / log2(pos + 1)) AS idcg FROM (
          SELECT case_id, grade, row_number() OVER (PARTITION BY case_id ORDER BY grade DESC) AS pos
          FROM lab WHERE grade >= {THRESHOLD}) WHERE pos <= 10 GROUP BY case_id)
SELECT avg(coalesce(dcg.dcg, 0) / idcg) FROM ideal LEFT JOIN dcg USING (case_id)''').fetchall()[0][0])
""".replace("{THRESHOLD}", str(THRESHOLD))

PYTREC = """
import sys, pytrec_eval
root = sys.argv[1]
qrels, run = {}, {}
with open(f"{root}/qrels.txt") as f:
    for line in f:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
with open(f"{root}/run-a.txt") as f:
    for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}, relevance_level=THRESHOLD).evaluate(run)
print(sum(v["ndcg_cut_10"] for v in res.values()) / len(res))
""".replace("THRESHOLD", str(THRESHOLD))

IR_MEASURES = """
import sys, ir_measures
from ir_measures import nDCG
root = sys.argv[1]
qrels = ir_measures.read_trec_qrels(f"{root}/qrels.txt")
run = ir_measures.read_trec_run(f"{root}/run-a.txt")
print(ir_measures.calc_aggregate([nDCG @ 10], qrels, run))
"""


@dataclass
class Figure:
    name: str
    seconds: float | None
    peak_mib: float | None
    note: str = ""


def timed(cmd: list[str], repeat: int) -> tuple[float | None, float | None, str]:
    """Median wall seconds and the largest peak RSS (MiB) over ``repeat`` runs; a failure returns its last line.

    Peak RSS comes from GNU time run around the command: a child's own ``ru_maxrss`` starts at its parent's RSS
    at fork (Linux keeps the high-water mark across exec), which would charge this script's memory to every command.
    """
    walls, peaks = [], []
    for _ in range(repeat):
        with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
            start = time.perf_counter()
            proc = subprocess.run(
                [GNU_TIME, "-f", "%M", "-o", rss.name, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            walls.append(time.perf_counter() - start)
            # 1 and 3 are verdicts (a leak or a failed gate; NOT CHECKED), not crashes; a Python traceback is one
            if proc.returncode not in (0, 1, 3) or b"Traceback (most recent call last)" in proc.stderr:
                last = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                return None, None, last[0][:100]
            peaks.append(int(rss.read().split()[-1]) / 1024)
    return statistics.median(walls), max(peaks), ""


def has_storeless_metrics() -> bool:
    out = subprocess.run([RAGTRIAGE, "metrics", "--help"], capture_output=True, text=True, check=False).stdout
    return "--qrels" in out


def measure(root: Path, repeat: int) -> list[Figure]:
    db = root / "scale.duckdb"
    py = sys.executable
    figures: list[Figure] = []

    def add(name: str, cmd: list[str], reps: int = repeat) -> None:
        seconds, peak, note = timed(cmd, reps)
        figures.append(Figure(name, seconds, peak, note))
        print(f"  {name:44s} {seconds if seconds is None else round(seconds, 2)} s  {peak and round(peak)} MiB {note}")

    load = [RAGTRIAGE, "load", "--db", str(db), "--dataset", str(root / "dataset")]
    load += ["--run", str(root / "run-a"), "--run", str(root / "run-b")]
    # each load starts from no store; the shell's own footprint is negligible beside the load's
    add("ragtriage load (dataset + 2 runs)", ["sh", "-c", f"rm -f {db} {db}.wal && exec " + " ".join(load)])
    # what `load` did before it left the classification for later (and the store the commands below read)
    waited = " ".join([*load, "--wait-classified"])
    add("ragtriage load --wait-classified", ["sh", "-c", f"rm -f {db} {db}.wal && exec {waited}"])
    add("floor: one DuckDB query, nDCG@10 over Parquet", [py, "-c", FLOOR, str(root)])
    add("ragtriage metrics --k 10 (store)", [RAGTRIAGE, "metrics", "--db", str(db), "--run", "run-a", "--k", "10"])
    if has_storeless_metrics():
        storeless = [RAGTRIAGE, "metrics", "--qrels", str(root / "qrels.txt"), "--run", str(root / "run-a.txt")]
        add("ragtriage metrics --qrels --run (no store)", [*storeless, "--measure", "nDCG@10"])
    else:
        figures.append(Figure("ragtriage metrics --qrels --run (no store)", None, None, "not in this build"))
    add("pytrec_eval reading the TREC files", [py, "-c", PYTREC, str(root)])
    add("ir_measures reading the TREC files", [py, "-c", IR_MEASURES, str(root)])
    add("ragtriage check", [RAGTRIAGE, "check", "--db", str(db), "--run", "run-a"])
    add("ragtriage failures --summary", [RAGTRIAGE, "failures", "--db", str(db), "--run", "run-a", "--summary"])
    compare = [RAGTRIAGE, "compare", "--db", str(db), "--run", "run-b", "--baseline", "run-a", "--k", "10"]
    add("ragtriage compare", compare)
    return figures


def markdown(results: dict[str, list[Figure]]) -> str:
    sizes = list(results)
    lines = ["| command | " + " | ".join(sizes) + " |", "|---|" + "---|" * len(sizes)]
    names = [f.name for f in next(iter(results.values()))]
    for i, name in enumerate(names):
        cells = []
        for size in sizes:
            fig = results[size][i]
            floor = next(f for f in results[size] if f.name.startswith("floor"))
            pytrec = next(f for f in results[size] if f.name.startswith("pytrec"))
            if fig.seconds is None:
                cells.append(fig.note or "failed")
                continue
            cell = f"{fig.seconds:.2f} s / {fig.peak_mib:.0f} MiB"
            ratios = []
            if floor.seconds and fig is not floor:
                ratios.append(f"{fig.seconds / floor.seconds:.1f}× floor")
            if pytrec.seconds and fig is not pytrec and "metrics" in name:
                ratios.append(f"{fig.seconds / pytrec.seconds:.2f}× pytrec_eval")
            cells.append(cell + (f" ({', '.join(ratios)})" if ratios else ""))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,10M,30M", help="result rows per run, comma-separated (1M, 10M, 30M, 200K)")
    ap.add_argument("--shape", choices=SHAPES, default="realistic", help="bench/data_shapes.py's data shape")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-scale"))
    ap.add_argument("--markdown", type=Path, help="also write the table to this file")
    ap.add_argument("--keep", action="store_true", help="keep each size's files (they are large)")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    a = ap.parse_args()
    shape = {"shape": a.shape, "threshold": THRESHOLD, "runs_per_load": 2}
    rec = Recorder("scale", {"sizes": a.sizes, "repeat": a.repeat, **shape}, shared=not a.quiet_machine)
    rec.note("Whole processes; seconds are the median of `repeat` runs, peak_mib the largest peak RSS (GNU time).")
    rec.note(describe(a.shape))
    results: dict[str, list[Figure]] = {}
    for size in a.sizes.split(","):
        root = a.dir / size.strip()
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        t = time.perf_counter()
        generate(root, parse_size(size), a.shape)
        print(f"{size}: generated {parse_size(size):,} rows per run in {time.perf_counter() - t:.1f}s under {root}")
        results[size.strip()] = measure(root, a.repeat)
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    for size, figures in results.items():
        floor = next(f for f in figures if f.name.startswith("floor"))
        pytrec = next(f for f in figures if f.name.startswith("pytrec"))
        for f in figures:
            ratios = {}
            if f.seconds is not None and floor.seconds and f is not floor:
                ratios["vs_floor"] = f.seconds / floor.seconds
            same_work = "metrics" in f.name or f.name.startswith("ir_measures")  # nDCG@10 from the same files
            if f.seconds is not None and pytrec.seconds and same_work:
                ratios["vs_pytrec_eval"] = f.seconds / pytrec.seconds
            rec.add(rows=size, name=f.name, seconds=f.seconds, peak_mib=f.peak_mib, **ratios, note=f.note)
    rec.write()
    table = markdown(results)
    header = textwrap.dedent(f"""\
        Whole processes, median of {a.repeat}, peak RSS per process; {a.shape} shape
        (bench/data_shapes.py); {os.cpu_count()} cores.
        """)
    print("\n" + header + "\n" + table)
    if a.markdown:
        a.markdown.write_text(header + "\n" + table + "\n")


if __name__ == "__main__":
    main()
