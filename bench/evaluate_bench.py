"""Benchmark: a one-off evaluation from files, ``ragtriage metrics --qrels F --run F`` against pytrec_eval reading
the same TREC files in Python, each as a whole process (start-up, reading, evaluating, printing).

    python bench/evaluate_bench.py [--rows 1000000 10000000] [--shape realistic|regular] [--repeat 3]
                                   [--dir /tmp/ragtriage-evaluate-bench] [--k 10] [--data DIR ...]

``--data DIR`` evaluates DIR/qrels.txt and DIR/run-a.txt (bench/scale_bench.py's layout) instead of generating.

The data is bench/data_shapes.py's ``--shape``: ``realistic`` (the default: uneven depth, document ids drawn from
a million, real-valued scores with ties, repeated documents in a few lists) or ``regular`` (100 results and 5
labels per case, ids d0, d2, ...), about ``rows`` result lines, qrels and run as TREC text; the run without its
repeated documents (``run-a-unique.txt``), which pytrec_eval's parser and trec_eval refuse. Both sides compute
trec_eval's set for ``--k``: num_q, num_ret, num_rel, num_rel_ret, map, Rprec, bpref, recip_rank, P, recall,
ndcg_cut, map_cut, success at k.

Not a timed test: it prints the median wall time and peak RSS of each side and the ratio ragtriage / pytrec_eval,
and writes them to bench/results/evaluate-<time>.json (bench/results_json.py). The machine may be shared: quote
medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from data_shapes import SHAPES, Layout, describe, generate
from results_json import Recorder

PYTREC = """
import sys, pytrec_eval
qrels_path, run_path, k = sys.argv[1], sys.argv[2], sys.argv[3]
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(run_path) as f:
    run = pytrec_eval.parse_run(f)
measures = {"num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
            "P." + k, "recall." + k, "ndcg_cut." + k, "map_cut." + k, "success." + k}
res = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
names = sorted(next(iter(res.values())))
for name in names:
    values = [q[name] for q in res.values()]
    total = sum(values) if name.startswith("num_") else sum(values) / len(values)
    print(f"{name}\\tall\\t{total:.4f}")
"""


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one whole process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_maxrss / 1024


def median_of(cmd: list[str], repeat: int) -> tuple[float, float]:
    runs = [timed(cmd) for _ in range(repeat)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def unique_run(folder: Path) -> Path:
    """run-a as pytrec_eval's parser and trec_eval accept it: without a document listed twice for one query."""
    unique = folder / "run-a-unique.txt"
    return unique if unique.exists() else folder / "run-a.txt"


def layouts(folder: Path, sizes: list[int], shape: str) -> list[Layout]:
    """Each size's files, generated unless a previous run left them."""
    out = []
    for rows in sizes:
        root = folder / f"{shape}-{rows}"
        done = root / "generated.json"
        if done.exists():
            out.append(Layout(root, shape, **json.loads(done.read_text())))
            continue
        data = generate(root, rows, shape)
        done.write_text(json.dumps({k: v for k, v in data.summary().items() if k != "shape"}))
        out.append(data)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--shape", choices=SHAPES, default="realistic", help="bench/data_shapes.py's data shape")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", default="10")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-evaluate-bench"))
    ap.add_argument("--data", type=Path, nargs="+", help="folders holding qrels.txt and run-a.txt (no generation)")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    args = ap.parse_args()
    params = {"shape": "given" if args.data else args.shape, "repeat": args.repeat, "k": args.k}
    rec = Recorder("evaluate", params, shared=not args.quiet_machine)
    rec.note("Whole processes from TREC files, trec_eval's measure set at k; median seconds, largest peak RSS.")
    if not args.data:
        rec.note(describe(args.shape))
    cli = str(Path(sys.executable).parent / "ragtriage")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; median of {args.repeat}")
    print("| rows | ragtriage metrics --qrels --run | pytrec_eval | ratio |")
    print("|---|---|---|---|")
    inputs = (
        [(d.name, d / "qrels.txt", unique_run(d)) for d in args.data]
        if args.data
        else [
            (f"{rows:,} {args.shape}", data.qrels, data.unique_run)
            for rows, data in zip(args.rows, layouts(args.dir, args.rows, args.shape), strict=True)
        ]
    )
    for label, qrels, run in inputs:
        ours = [cli, "metrics", "--qrels", str(qrels), "--run", str(run), "--trec-compat", "--format", "trec"]
        ours += ["--k", args.k]
        ref = [sys.executable, "-c", PYTREC, str(qrels), str(run), args.k]
        t_ours, m_ours = median_of(ours, args.repeat)
        t_ref, m_ref = median_of(ref, args.repeat)
        print(
            f"| {label} | {t_ours:.2f} s / {m_ours:.0f} MiB | {t_ref:.2f} s / {m_ref:.0f} MiB "
            f"| {t_ours / t_ref:.2f}x |",
            flush=True,
        )
        rec.add(
            rows=label,
            name="ragtriage metrics --qrels --run",
            seconds=t_ours,
            peak_mib=m_ours,
            vs_pytrec_eval=t_ours / t_ref,
        )
        rec.add(rows=label, name="pytrec_eval (peer)", seconds=t_ref, peak_mib=m_ref)
    rec.write()


if __name__ == "__main__":
    main()
