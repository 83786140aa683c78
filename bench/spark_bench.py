"""The Spark engine in local mode against the DuckDB engine, as whole processes, on the same files.

    python bench/spark_bench.py [--sizes 1M,10M] [--repeat 1] [--dir /tmp/ragtriage-spark-bench]

For each size it generates one collection (N result rows, ~100 per case, uneven depths 50..150, document ids drawn
from a 10M-id space, scores with three decimals so ties occur, five graded labels per case, a principal per case and
an acl and tenant per manifest document, drawn at random, so most result rows leak: the worst case for the size of
the check's output) as TREC text (qrels, run) and as contract folders in Parquet, then times,
each in its own process, interleaved (DuckDB then Spark, per size and repeat):

- measures: ``ragtriage metrics --qrels Q --run R -m nDCG@10 -m AP -m P@10`` with ``--engine duckdb`` and with
  ``--engine spark`` (``local[2]``);
- leakage: ``ragtriage load`` + ``ragtriage check`` (DuckDB: the store is the only way there) against
  ``ragtriage check --engine spark --dataset D --run R`` (the leakage check alone).

Figures: wall seconds and CPU seconds (user+sys of the process and every descendant, the Spark JVM included,
sampled from /proc), with the load average recorded by bench/results_json.Recorder in
bench/results/spark-<time>.json, which scripts/perf_doc.py renders into docs/performance.md.

Local Spark is expected to be slower on this machine: every process starts a JVM (seconds before the first row), two
cores leave Spark's parallelism nothing to spread over, and its plans shuffle rows between tasks (sort-merge joins,
exchanges for each window) where DuckDB joins and sorts in one process's memory. The engine is there for data that
does not fit one machine; these figures are its fixed cost, not its speed on a cluster.
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

from results_json import Recorder

RAGTRIAGE = str(Path(sys.executable).with_name("ragtriage"))
MEASURES = ("nDCG@10", "AP", "P@10")


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def generate(root: Path, rows: int) -> None:
    """TREC qrels/run and a contract dataset + run folder (Parquet) of one synthetic collection of ~``rows``."""
    import duckdb

    cases = rows // 100
    ds, run = root / "dataset", root / "run"
    for folder in (ds, run):
        folder.mkdir(parents=True, exist_ok=True)
    (ds / "dataset.json").write_text(
        json.dumps({"name": "spark-bench", "version": "1", "unit": "document", "relevance_threshold": 1})
    )
    (run / "run.json").write_text(json.dumps({"run_id": "r", "k": 10}))
    con = duckdb.connect()
    con.execute(f"SET temp_directory='{root / 'tmp'}'")
    # depth 50..150 per case (mean 100); document ids hashed into a 10M-id space; scores with 3 decimals (ties)
    con.execute(f"""CREATE TABLE res AS
        SELECT 'q' || c AS case_id, CAST(r AS INTEGER) AS rank,
               'doc-' || (hash(c * 1000 + r) % 10000000) AS document_id,
               round(1.0 - r / 200.0 + (hash(c * 7 + r) % 7) / 1000.0, 3) AS score
        FROM range({cases}) t(c), LATERAL (SELECT unnest(range(1, 51 + CAST(hash(c) % 101 AS INTEGER))) AS r)""")
    con.execute(f"""CREATE TABLE lab AS SELECT DISTINCT ON (case_id, document_id) case_id, document_id, grade FROM (
        SELECT 'q' || (i // 5) AS case_id, 'doc-' || (hash((i // 5) * 1000 + 1 + hash(i) % 60) % 10000000)
               AS document_id, CAST(hash(i * 31) % 4 AS INTEGER) AS grade FROM range({cases * 5}) t(i))""")
    con.execute(
        f"COPY (SELECT case_id, 0, document_id, grade FROM lab) TO '{root / 'qrels.txt'}' (DELIMITER ' ', HEADER false)"
    )
    con.execute(f"""COPY (SELECT case_id, 'Q0', document_id, rank, score, 'bench' FROM res ORDER BY case_id, rank)
                    TO '{root / "run.txt"}' (DELIMITER ' ', HEADER false)""")
    principal = "{'id': 'u' || (c % 500), 'groups': ['g' || (c % 20)], 'tenant': 't' || (c % 3)}"
    con.execute(f"""COPY (SELECT 'q' || c AS id, 'query ' || c AS query, {principal} AS principal
                        FROM range({cases}) t(c)) TO '{ds / "cases.parquet"}' (FORMAT parquet)""")
    con.execute(f"COPY lab TO '{ds / 'labels.parquet'}' (FORMAT parquet)")
    # the manifest: every document a result names (most with an acl of two groups, some another tenant's)
    con.execute(f"""COPY (SELECT document_id, 'text of ' || document_id AS text,
                               't' || (hash(document_id) % 3) AS tenant,
                               ['g' || (hash(document_id) % 20), 'g' || (hash(document_id || 'x') % 20)] AS acl
                        FROM (SELECT DISTINCT document_id FROM res))
                    TO '{ds / "documents.parquet"}' (FORMAT parquet)""")
    results = run / "results.parquet"
    con.execute(
        f"COPY (SELECT case_id, 'final' AS stage, rank, document_id, score FROM res) TO '{results}' (FORMAT parquet)"
    )
    con.close()


def _tree_cpu(root: int, seen: dict[int, float]) -> None:
    """CPU seconds so far of ``root`` and its descendants, by pid, into ``seen`` (the Spark JVM is a grandchild
    that no one waits for, so getrusage's children figures never count it)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    for pid in tree & times.keys():
        seen[pid] = max(seen.get(pid, 0.0), times[pid])


def timed(argv: list[str], out: Path) -> dict[str, float]:
    """One whole process: wall seconds, CPU seconds of it and every descendant (sampled every 0.2 s from /proc:
    the last fraction of a second of a process is missed), exit code."""
    seen: dict[int, float] = {}
    start = time.perf_counter()
    with out.open("w") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            _tree_cpu(proc.pid, seen)
            time.sleep(0.2)
    wall = time.perf_counter() - start
    return {"wall_s": wall, "cpu_s": sum(seen.values()), "exit": float(proc.returncode)}


def commands(root: Path) -> dict[str, dict[str, list[list[str]]]]:
    """Per task, per engine: the processes it takes (timed one after the other and summed)."""
    metrics = [RAGTRIAGE, "metrics", "--qrels", str(root / "qrels.txt"), "--run", str(root / "run.txt")]
    for m in MEASURES:
        metrics += ["-m", m]
    db = str(root / "bench.duckdb")
    ds, run = str(root / "dataset"), str(root / "run")
    return {
        "measures": {"duckdb": [metrics], "spark": [[*metrics, "--engine", "spark"]]},
        "leakage": {
            "duckdb": [
                [RAGTRIAGE, "load", "--db", db, "--dataset", ds, "--run", run, "--no-precompute", "--replace"],
                [RAGTRIAGE, "check", "--db", db, "--run", "r", "--format", "json"],
            ],
            "spark": [[RAGTRIAGE, "check", "--engine", "spark", "--dataset", ds, "--run", run, "--format", "json"]],
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1M,10M")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-spark-bench"))
    ap.add_argument("--tasks", default="measures,leakage", help="which of measures, leakage to time")
    args = ap.parse_args()
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if not tasks or set(tasks) - {"measures", "leakage"}:
        ap.error("--tasks takes measures, leakage or both")
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    params = {"sizes": sizes, "repeat": args.repeat, "measures": list(MEASURES), "master": "local[2]", "tasks": tasks}
    rec = Recorder("spark", params)
    rec.note("data: ~100 results per case (depth 50..150), ids from a 10M space, 3-decimal scores (ties), 5 labels")
    rec.note(
        "local Spark is slower here by design: each process starts a JVM, local[2] has two cores to spread tasks "
        "over, and Spark's plans shuffle rows between tasks (exchanges for joins and windows) where DuckDB works "
        "in one process's memory; the Spark engine is for data beyond one machine, and these are its fixed costs"
    )
    rec.note(
        "leakage on DuckDB is `load` + `check` (every check; the store is its input); on Spark, the leakage check alone"
    )
    for rows in sizes:
        root = args.dir / str(rows)
        if not (root / "run.txt").exists():
            generate(root, rows)
    seen: dict[tuple[int, str, str], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for rows in sizes:
            root = args.dir / str(rows)
            for task, engines in commands(root).items():
                if task not in tasks:
                    continue
                for engine, argvs in engines.items():  # interleaved: DuckDB then Spark on the same files
                    if engine == "duckdb" and task == "leakage":
                        (root / "bench.duckdb").unlink(missing_ok=True)
                    parts = [timed(argv, root / f"{task}-{engine}.log") for argv in argvs]
                    total = {k: sum(p[k] for p in parts) for k in ("wall_s", "cpu_s")}
                    total["exit"] = max(p["exit"] for p in parts)
                    seen.setdefault((rows, task, engine), []).append(total)
                    print(
                        f"{rows:>10,} {task:9} {engine:6} wall {total['wall_s']:7.1f}s cpu {total['cpu_s']:7.1f}s "
                        f"exit {int(total['exit'])}  load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
    for (rows, task, engine), runs in seen.items():
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        peer = seen[(rows, task, "duckdb")]
        rec.add(
            rows=rows,
            task=task,
            engine=engine,
            wall_s=wall,
            cpu_s=cpu,
            exit=int(runs[-1]["exit"]),
            vs_duckdb_wall=wall / statistics.median(r["wall_s"] for r in peer),
            vs_duckdb_cpu=cpu / statistics.median(r["cpu_s"] for r in peer),
        )
    rec.write()


if __name__ == "__main__":
    main()
