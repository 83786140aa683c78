"""Benchmark: `ragtriage trec-eval` against the real trec_eval on the same files, same flags, same bytes.

    python bench/trec_eval_bench.py --trec-eval /path/to/trec_eval [--rows 1000000,10000000] [--runs 3]
                                    [--shape trec|rag] [--measures official] [--dir DIR]

Data (generated once per size and shape by DuckDB, written as TREC files): queries of uneven depth (``trec``:
10 to 2,000 results, as TREC runs; ``rag``: 10 to 200, many more queries, as a RAG evaluation set; both skewed
towards short lists), document ids drawn from a space of 10^9 (``d000123456``), real-valued scores
rounded to 3 decimals so that lists hold ties, qrels pooled from the run (about 15% of the listed documents judged,
grades 0-3) plus relevant documents the run never lists. A second file pair per size adds what real files hold
and trec_eval refuses: a few lists repeating a document and a few repeated qrels lines. On those both programs
must refuse the same way (same exit code, same stdout); only the clean pair is timed.

For each size the two programs run interleaved ``--runs`` times (the machine is shared: medians); every run's
stdout is compared byte for byte. Prints a table and writes the figures as bench/results/trec-eval-<time>.json
(``bench/results_json.py``; docs/performance.md renders the newest).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from results_json import Recorder  # noqa: E402


def generate(folder: Path, rows: int, *, repeats: bool, shape: str = "trec") -> tuple[Path, Path, int]:
    """(qrels, run, run lines) for about ``rows`` run lines; ``repeats`` adds repeated docs and qrels lines."""
    suffix = f"{rows}{'' if shape == 'trec' else '-' + shape}{'-repeats' if repeats else ''}"
    qrels, run = folder / f"qrels-{suffix}.txt", folder / f"run-{suffix}.txt"
    if qrels.exists() and run.exists():
        return qrels, run, sum(1 for _ in run.open("rb"))
    spread = 1990 if shape == "trec" else 190
    mean_depth = 10 + spread / 3  # depth = 10 + spread * u^2
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("SELECT setseed(0.38)")
    con.execute(
        f"""CREATE TABLE q AS
            SELECT 'q' || (1000 + i) AS qid, CAST(10 + floor({spread} * pow(random(), 2)) AS INT) AS depth
            FROM range({max(1, round(rows / mean_depth))}) t(i)"""
    )
    con.execute(
        """CREATE TABLE r AS
           SELECT qid, 'd' || lpad(CAST(CAST(floor(random() * 1e9) AS BIGINT) AS VARCHAR), 9, '0') AS docno,
                  round(20.0 * exp(-k / 300.0) + random() * 2.0, 3) AS score
           FROM (SELECT qid, unnest(range(depth)) AS k FROM q)"""
    )
    # a document id drawn twice in one list: keep one (the clean file), or keep both below (the repeats file)
    con.execute("CREATE TABLE run AS SELECT * FROM r QUALIFY row_number() OVER (PARTITION BY qid, docno) = 1")
    con.execute(
        """CREATE TABLE qr AS
           SELECT qid, docno, CASE WHEN u < 0.6 THEN 0 WHEN u < 0.85 THEN 1 WHEN u < 0.95 THEN 2 ELSE 3 END AS rel
           FROM (SELECT qid, docno, random() AS u FROM run WHERE random() < 0.15)
           UNION ALL
           SELECT qid, 'd' || lpad(CAST(CAST(floor(random() * 1e9) AS BIGINT) AS VARCHAR), 9, '0'),
                  CAST(1 + floor(random() * 3) AS INT)
           FROM (SELECT qid, unnest(range(CAST(1 + floor(random() * 20) AS INT))) FROM q)"""
    )
    con.execute("CREATE TABLE qrels AS SELECT * FROM qr QUALIFY row_number() OVER (PARTITION BY qid, docno) = 1")
    if repeats:
        con.execute("INSERT INTO run SELECT qid, docno, score - 0.5 FROM run USING SAMPLE 20 ROWS (reservoir, 7)")
        con.execute("INSERT INTO qrels SELECT * FROM qrels USING SAMPLE 10 ROWS (reservoir, 7)")
    con.execute(
        f"""COPY (SELECT qid || ' 0 ' || docno || ' ' || rel FROM qrels ORDER BY qid, docno)
            TO '{qrels}' (HEADER false, QUOTE '', DELIMITER '\t')"""
    )
    con.execute(
        f"""COPY (SELECT qid || ' Q0 ' || docno || ' ' || row_number() OVER (PARTITION BY qid ORDER BY score DESC)
                         || ' ' || score || ' bench'
                  FROM run ORDER BY qid, score DESC)
            TO '{run}' (HEADER false, QUOTE '', DELIMITER '\t')"""
    )
    n = con.execute("SELECT count(*) FROM run").fetchall()[0][0]
    con.close()
    return qrels, run, int(n)


def timed(cmd: list[str]) -> tuple[float, float, int, bytes]:
    """(wall seconds, CPU seconds user+system, exit code, stdout) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.returncode, p.stdout


def bench_size(args: argparse.Namespace, rows: int) -> dict[str, object]:
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    qrels, run, lines = generate(folder, rows, repeats=False, shape=args.shape)
    flags = [f for m in args.measures.split(",") for f in ("-m", m)]
    te = [args.trec_eval, *flags, str(qrels), str(run)]
    ours = [sys.executable, "-m", "ragtriage.trec_eval", *flags, str(qrels), str(run)]
    times: dict[str, list[float]] = {"trec_eval": [], "ragtriage": []}
    cpu: dict[str, list[float]] = {"trec_eval": [], "ragtriage": []}
    same = True
    for _ in range(args.runs):
        t_te, c_te, rc_te, out_te = timed(te)
        t_rt, c_rt, rc_rt, out_rt = timed(ours)
        times["trec_eval"].append(t_te)
        times["ragtriage"].append(t_rt)
        cpu["trec_eval"].append(c_te)
        cpu["ragtriage"].append(c_rt)
        same = same and rc_te == rc_rt == 0 and out_te == out_rt
    rq, rr, rep_lines = generate(folder, rows, repeats=True, shape=args.shape)
    _, _, rc_te, out_te = timed([args.trec_eval, "-q", *flags, str(rq), str(rr)])
    _, _, rc_rt, out_rt = timed([sys.executable, "-m", "ragtriage.trec_eval", "-q", *flags, str(rq), str(rr)])
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    return {
        "run_lines": lines,
        "queries": len({ln.split(None, 1)[0] for ln in qrels.open("rb")}),
        "measures": args.measures,
        "runs": args.runs,
        "seconds": times,
        "median_seconds": med,
        "cpu_seconds": cpu,
        "median_cpu_seconds": med_cpu,
        "ratio_ragtriage_to_trec_eval": med["ragtriage"] / med["trec_eval"],
        "same_stdout_every_run": same,
        "repeats_case": {
            "run_lines": rep_lines,
            "trec_eval_exit": rc_te,
            "ragtriage_exit": rc_rt,
            "same_stdout": out_te == out_rt,
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trec-eval", required=True, help="path to a trec_eval binary")
    ap.add_argument("--rows", default="1000000,10000000", help="run lines per size, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shape", choices=("trec", "rag"), default="trec", help="list depths: TREC-like or RAG-like")
    ap.add_argument("--measures", default="official", help="-m values, comma-separated (official, all_trec, ...)")
    ap.add_argument("--dir", default="/tmp/ragtriage-trec-eval-bench")
    args = ap.parse_args()
    version = subprocess.run([args.trec_eval, "-v"], capture_output=True, text=True, check=False).stderr.strip()
    params = {
        "shape": args.shape,
        "rows": args.rows,
        "runs": args.runs,
        "measures": args.measures,
        "trec_eval": version,
    }
    rec = Recorder("trec-eval", params)
    rec.note(
        f"data: uneven depth 10-{2000 if args.shape == 'trec' else 200} (u^2 skew), doc ids from 1e9, scores rounded "
        "to 3 decimals (ties), qrels pooled at ~15% of listed docs (grades 0-3) + 1-20 unretrieved relevant per query"
    )
    print(f"{'rows':>12} {'trec_eval s':>12} {'ragtriage s':>12} {'ratio':>7} {'cpu ratio':>9}  same bytes  repeats")
    for rows in (int(x) for x in args.rows.split(",")):
        r = bench_size(args, rows)
        med, cpu, rep = r["median_seconds"], r["median_cpu_seconds"], r["repeats_case"]
        for tool in ("trec_eval", "ragtriage"):
            rec.add(
                shape=args.shape,
                rows=r["run_lines"],
                queries=r["queries"],
                tool=tool,
                seconds=med[tool],  # type: ignore[index]
                cpu_seconds=cpu[tool],  # type: ignore[index]
                vs_trec_eval=med[tool] / med["trec_eval"],  # type: ignore[index]
                same_stdout=r["same_stdout_every_run"],
            )
        rec.note(
            f"{r['run_lines']:,} lines: every run's seconds {r['seconds']}; repeats file (refused by both): exits "
            f"{rep['trec_eval_exit']}/{rep['ragtriage_exit']}, same stdout {rep['same_stdout']}"  # type: ignore[index]
        )
        print(
            f"{r['run_lines']:>12,} {med['trec_eval']:>12.2f} {med['ragtriage']:>12.2f} "  # type: ignore[index]
            f"{r['ratio_ragtriage_to_trec_eval']:>7.3f} "
            f"{cpu['ragtriage'] / cpu['trec_eval']:>9.3f}  "  # type: ignore[index]
            f"{r['same_stdout_every_run']!s:>10}  "
            f"{rep['trec_eval_exit']}/{rep['ragtriage_exit']}, {rep['same_stdout']}",  # type: ignore[index]
            flush=True,
        )
    rec.write()


if __name__ == "__main__":
    main()
