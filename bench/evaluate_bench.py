"""Benchmark: a one-off evaluation from files, ``ragtriage metrics --qrels F --run F`` against pytrec_eval reading
the same TREC files in Python, each as a whole process (start-up, reading, evaluating, printing).

    python bench/evaluate_bench.py [--rows 1000000 10000000] [--depth 100] [--labels 5] [--repeat 3]
                                   [--dir /tmp/ragtriage-evaluate-bench] [--k 10] [--data DIR ...]

``--data DIR`` evaluates DIR/qrels.txt and DIR/run-a.txt (bench/scale_bench.py's layout) instead of generating.

N cases x ``depth`` results (rows / depth cases), ``labels`` judged documents per case (grades 0..3), the run in
TREC 6-column format with distinct scores. Both sides compute trec_eval's set for ``--k``: num_q, num_ret,
num_rel, num_rel_ret, map, Rprec, bpref, recip_rank, P, recall, ndcg_cut, map_cut, success at k.

Not a timed test: it prints the median wall time and peak RSS of each side and the ratio ragtriage / pytrec_eval,
and writes them to bench/results/evaluate-<time>.json (bench/results_json.py). The machine may be shared: quote
medians and ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def generate(root: Path, rows: int, depth: int, labels: int) -> tuple[Path, Path]:
    import duckdb

    root.mkdir(parents=True, exist_ok=True)
    qrels, run = root / f"qrels-{rows}.txt", root / f"run-{rows}.txt"
    if qrels.exists() and run.exists():
        return qrels, run
    cases = rows // depth
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # no bar in a benchmark's log
    # distinct judged documents in a window of 2*depth around the ranked list: some retrieved, some not
    con.execute(f"""COPY (SELECT 'q' || (i // {labels}) || ' 0 d' || ((i // {labels}) * 7
                                  + (hash(i // {labels}) + (i % {labels}) * 41) % {2 * depth})
                           || ' ' || CAST(hash(i * 31) % 4 AS INTEGER)
                    FROM range({cases * labels}) t(i))
                    TO '{qrels}' (FORMAT csv, HEADER false, QUOTE '', DELIMITER '\t')""")
    con.execute(f"""COPY (SELECT 'q' || (i // {depth}) || ' Q0 d' || ((i // {depth}) * 7 + (i % {depth}) * 2)
                           || ' ' || (i % {depth} + 1) || ' ' || round(100.0 - (i % {depth}) * 0.37, 4) || ' bench'
                    FROM range({cases * depth}) t(i))
                    TO '{run}' (FORMAT csv, HEADER false, QUOTE '', DELIMITER '\t')""")
    con.close()
    return qrels, run


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--labels", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--k", default="10")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-evaluate-bench"))
    ap.add_argument("--data", type=Path, nargs="+", help="folders holding qrels.txt and run-a.txt (no generation)")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    args = ap.parse_args()
    params = {"depth": args.depth, "labels": args.labels, "repeat": args.repeat, "k": args.k}
    rec = Recorder("evaluate", params, shared=not args.quiet_machine)
    rec.note("Whole processes from TREC files, trec_eval's measure set at k; median seconds, largest peak RSS.")
    cli = str(Path(sys.executable).parent / "ragtriage")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; median of {args.repeat}")
    print("| rows | ragtriage metrics --qrels --run | pytrec_eval | ratio |")
    print("|---|---|---|---|")
    inputs = (
        [(d.name, d / "qrels.txt", d / "run-a.txt") for d in args.data]
        if args.data
        else [(f"{rows:,}", *generate(args.dir, rows, args.depth, args.labels)) for rows in args.rows]
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
