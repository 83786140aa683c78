"""Benchmark: `ragtriage compare --runs` with three measures, on the sample's four runs and on a 10M-row store of
four runs (25,000 cases x 100 results each), beside ranx's ``compare`` on the same data.

Each phase runs in its own process (peak RSS is its own; ranx's numba kernels compile in its cold call). Usage:

    python bench/compare_bench.py [--cases 25000] [--depth 100] [--dir /tmp/ragtriage-compare-bench]
                                  [--repeat 3] [--skip-reference]

Not a timed test: it prints medians of ``--repeat`` runs and the ratio to ranx, and writes every figure to
bench/results/compare-<time>.json (bench/results_json.py). The machine may be shared, so figures are noisy;
compare medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from results_json import Recorder

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics_bench import THRESHOLD, generate  # noqa: E402  (the same dataset and baseline run)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_RUNS = ("bm25", "dense", "hybrid-rerank", "no-acl-filter")
MEASURES = ("nDCG@10", "R@100", "RR@10")
RANX_MEASURES = ["ndcg_burges@10", f"recall@100-l{THRESHOLD}", f"mrr@10-l{THRESHOLD}"]
BIG_RUNS = ("bench", "alt1", "alt2", "alt3")


def write_alternatives(root: Path, cases: int, depth: int) -> None:
    """Three more runs over the same cases: each list shifted by a per-case offset of 0-2 units, so each run
    finds different relevant units than the baseline ``bench``."""
    import duckdb

    con = duckdb.connect()
    for r, name in enumerate(BIG_RUNS[1:], start=1):
        run = root / name
        run.mkdir(parents=True, exist_ok=True)
        (run / "run.json").write_text(json.dumps({"run_id": name, "k": depth, "reranker": f"shift-{r}"}))
        unit = f"((i // {depth}) * 7 + (i % {depth}) * 2 + (hash(i // {depth} + {r}) % 3))"
        con.execute(f"""COPY (SELECT 'q' || (i // {depth}) AS case_id, 'final' AS stage,
                               CAST(i % {depth} + 1 AS INTEGER) AS rank, 'u' || {unit} AS document_id,
                               'u' || {unit} AS chunk_id, 1.0 / (i % {depth} + 1) AS score
                        FROM range({cases * depth}) t(i))
                        TO '{run / "results.parquet"}' (FORMAT parquet)""")


def _cli(db: Path, runs: tuple[str, ...]) -> list[str]:
    exe = Path(sys.executable).with_name("ragtriage")  # the console script of this environment
    args = [str(exe), "compare", "--db", str(db), "--runs", ",".join(runs)]
    return args + ["--baseline", runs[0], *(a for m in MEASURES for a in ("--measure", m)), "--format", "json"]


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_cli(db: Path, runs: tuple[str, ...], repeat: int) -> tuple[float, float, dict[str, Any]]:
    """Median wall and CPU (user + system, all threads) seconds of the command as a whole process."""
    times, cpu, out = [], [], {}
    for _ in range(repeat):
        t, c = time.perf_counter(), _child_cpu()
        proc = subprocess.run(_cli(db, runs), capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t)
        cpu.append(_child_cpu() - c)
        out = json.loads(proc.stdout)
    return statistics.median(times), statistics.median(cpu), out


def phase_sample(root: Path, repeat: int) -> dict[str, Any]:
    from ragtriage.store import connect, load_dataset, load_run

    db = root / "sample.duckdb"
    db.unlink(missing_ok=True)
    con = connect(db)
    load_dataset(con, ROOT / "sample_runs" / "dataset")
    for run in SAMPLE_RUNS:
        load_run(con, ROOT / "sample_runs" / "runs" / run)
    con.close()
    wall, cpu, out = _timed_cli(db, SAMPLE_RUNS, repeat)
    return {
        "sample_compare_cli_s": wall,
        "sample_compare_cli_cpu_s": cpu,
        "sample_cases": out["n_cases"],
        "comparisons": out["n_comparisons"],
    }


def phase_load(root: Path, repeat: int) -> dict[str, Any]:
    from ragtriage.store import connect, load_dataset, load_run

    db = root / "bench.duckdb"
    db.unlink(missing_ok=True)
    con = connect(db)
    t = time.perf_counter()
    load_dataset(con, root / "dataset")
    for name in BIG_RUNS:
        load_run(con, root / ("run" if name == "bench" else name))
    rows = con.execute("SELECT count(*) FROM result_rows").fetchone()
    con.close()
    return {"load_s": time.perf_counter() - t, "result_rows": rows[0] if rows else 0}


def phase_compare(root: Path, repeat: int) -> dict[str, Any]:
    from ragtriage.experiments.runs_table import compare_runs
    from ragtriage.store import connect

    con = connect(root / "bench.duckdb", read_only=True)
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        rc = compare_runs(con, BIG_RUNS, "bench", MEASURES)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    con.close()
    wall, cli_cpu, _ = _timed_cli(root / "bench.duckdb", BIG_RUNS, repeat)
    means = {f"{r['run_id']} {r['measure']}": round(r["mean"], 4) for r in rc.table.to_pylist()}
    return {
        "compare_core_s": statistics.median(times),
        "compare_core_cpu_s": statistics.median(cpu),
        "compare_cli_s": wall,
        "compare_cli_cpu_s": cli_cpu,
        "cases": rc.n_cases,
        "means": means,
    }


def _ranx_inputs(root: Path) -> tuple[Any, list[Any]]:
    import pyarrow.parquet as pq
    from ranx import Qrels, Run

    qrels: dict[str, dict[str, int]] = {}
    lab = pq.read_table(root / "dataset" / "labels.parquet", columns=["case_id", "chunk_id", "grade"])
    for c, u, g in zip(*(lab.column(i).to_pylist() for i in range(3)), strict=True):
        qrels.setdefault(c, {})[u] = max(g, qrels.get(c, {}).get(u, 0))
    # ragtriage compares over the cases with a relevant unit; ranx would average the others in as zeros
    qrels = {c: units for c, units in qrels.items() if max(units.values()) >= THRESHOLD}
    runs = []
    for name in BIG_RUNS:
        res = pq.read_table(root / ("run" if name == "bench" else name) / "results.parquet")
        run: dict[str, dict[str, float]] = {}
        cols = [res.column(c).to_pylist() for c in ("case_id", "chunk_id", "score")]
        for c, u, s in zip(*cols, strict=True):
            run.setdefault(c, {}).setdefault(u, s)
        runs.append(Run(run, name=name))
    return Qrels(qrels), runs


def phase_ranx(root: Path, repeat: int) -> dict[str, Any]:
    from ranx import compare

    t = time.perf_counter()
    qrels, runs = _ranx_inputs(root)
    out: dict[str, Any] = {"ranx_build_s": time.perf_counter() - t}
    t = time.perf_counter()
    report = compare(qrels, runs, RANX_MEASURES, stat_test="fisher", max_p=0.05, make_comparable=True)
    out["ranx_cold_s"] = time.perf_counter() - t  # includes compiling the numba kernels
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        report = compare(qrels, runs, RANX_MEASURES, stat_test="fisher", max_p=0.05, make_comparable=True)
        times.append(time.perf_counter() - t)
    out["ranx_warm_s"] = statistics.median(times)
    out["ranx_means"] = {f"{n} {m}": round(v, 4) for n, s in report.results.items() for m, v in s.items()}
    return out


PHASES = {"sample": phase_sample, "load": phase_load, "compare": phase_compare, "ranx": phase_ranx}


def run_phase(name: str, root: Path, repeat: int, timeout: float | None = None) -> dict[str, Any]:
    """One phase in a fresh process; its figures are printed as soon as it ends."""
    cmd = [sys.executable, __file__, "--phase", name, "--dir", str(root), "--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        result: dict[str, Any] = {"error": f"did not finish in {timeout:.0f}s"}
    else:
        if proc.returncode != 0:
            result = {"error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
        else:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
    shown = {k: v for k, v in result.items() if not k.endswith("means")}
    print(f"{name:8s} " + "  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))
    sys.stdout.flush()
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=25_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-compare-bench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--ranx-timeout", type=float, default=1800.0, help="give up on ranx after this many seconds")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    a = ap.parse_args()
    if a.phase:
        out = PHASES[a.phase](a.dir, a.repeat)
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out))
        return
    a.dir.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    generate(a.dir, a.cases, a.depth)
    write_alternatives(a.dir, a.cases, a.depth)
    total = a.cases * a.depth * len(BIG_RUNS)
    took = time.perf_counter() - t
    print(f"generated {len(BIG_RUNS)} runs x {a.cases} cases x {a.depth} = {total:,} rows in {took:.1f}s", flush=True)
    phases = ["sample", "load", "compare"] + ([] if a.skip_reference else ["ranx"])
    res = {p: run_phase(p, a.dir, a.repeat, a.ranx_timeout if p == "ranx" else None) for p in phases}
    c, x = res["compare"], res.get("ranx", {})
    params = {"cases": a.cases, "depth": a.depth, "runs": len(BIG_RUNS), "repeat": a.repeat}
    rec = Recorder("compare", {**params, "skip_reference": a.skip_reference}, shared=not a.quiet_machine)
    rec.note("Each phase in its own process; *_s are median wall seconds, *_cpu_s CPU seconds, peak_rss_mib its own.")
    rec.add_phases(res)
    if "ranx_warm_s" in x and "compare_core_s" in c:
        ratio = (x["ranx_build_s"] + x["ranx_warm_s"]) / c["compare_core_s"]
        rec.add(phase="ratio", name="ranx (build + warm) / ragtriage core", value=ratio)
    rec.write()
    load = os.getloadavg()[0]
    print(
        f"medians of {a.repeat}; load average {load:.1f} on {os.cpu_count()} cores "
        "(shared machine: noisy; CPU = user + system of all threads)"
    )
    smp, nan = res["sample"], float("nan")
    print(
        f"sample, 4 runs x 3 measures, CLI end to end: {smp.get('sample_compare_cli_s', nan):.2f}s wall, "
        f"{smp.get('sample_compare_cli_cpu_s', nan):.2f}s CPU"
    )
    print(
        f"{total:,} rows, 4 runs x 3 measures (10,000 sign-flip resamples, 1,000 bootstrap): core "
        f"{c.get('compare_core_s', nan):.2f}s wall, {c.get('compare_core_cpu_s', nan):.2f}s CPU; CLI end to end "
        f"{c.get('compare_cli_s', nan):.2f}s wall, {c.get('compare_cli_cpu_s', nan):.2f}s CPU"
    )
    if "ranx_warm_s" in x and "compare_core_s" in c:
        print(
            f"ranx compare (fisher randomization, 1000 permutations): build {x['ranx_build_s']:.2f}s + "
            f"{x['ranx_warm_s']:.2f}s warm ({x['ranx_cold_s']:.2f}s cold, numba JIT); "
            f"ranx (build + warm) / ragtriage core: {(x['ranx_build_s'] + x['ranx_warm_s']) / c['compare_core_s']:.1f}x"
        )
        print(f"ragtriage means: {json.dumps(c['means'])}")
        print(f"ranx means:      {json.dumps(x['ranx_means'])}")


if __name__ == "__main__":
    main()
