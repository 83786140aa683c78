"""Benchmark: loading a TREC run file against loading the same rows from Parquet (issue 13's bar: <= 1.5x).

Generates one qrels file (TREC format, three judgements per query) and one run of ``--cases`` x ``--depth`` rows
twice: as a TREC text file (``qid Q0 docno rank score tag``) and as a contract run folder (run.json +
results.parquet). Each load runs ``--repeat`` times into a fresh copy of a store that already holds the dataset,
each in its own process, measured two ways, alternating TREC and Parquet:

- the command a user runs, ``ragtriage load --db STORE --run FILE --no-precompute`` (Python start-up, opening the
  store, the load, its commit and the store's checkpoint on close; classification and the summary cache left out,
  since they cost the same for both formats);
- ``load_inputs`` alone, timed inside the process (no start-up, no checkpoint): the stricter ratio.

The script prints the median of each and the ratios. Usage:

    python bench/trec_load_bench.py [--cases 100000] [--depth 100] [--repeat 3] [--dir /tmp/ragtriage-trec-bench]

Not a timed test: the machine is shared, so quote the medians it prints. Every figure is also written to
bench/results/trec-load-<time>.json (bench/results_json.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results_json import Recorder


def generate(root: Path, cases: int, depth: int) -> None:
    import duckdb

    root.mkdir(parents=True, exist_ok=True)
    folder = root / "run"
    folder.mkdir(exist_ok=True)
    (folder / "run.json").write_text(json.dumps({"run_id": "bench", "k": depth}))
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # no bar in a benchmark's log
    con.execute(f"""COPY (SELECT 'q' || (i // 3) AS qid, 0 AS it, 'd' || ((i // 3) * 7 + hash(i) % 200) AS docno,
                           CAST(hash(i * 31) % 4 AS INTEGER) AS rel FROM range({cases * 3}) t(i))
                    TO '{root / "qrels.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false)""")
    rows = f"""SELECT 'q' || (i // {depth}) AS case_id, CAST(i % {depth} + 1 AS INTEGER) AS rank,
                      'd' || ((i // {depth}) * 7 + (i % {depth}) * 2) AS document_id,
                      round(100.0 - (i % {depth}) * 0.5, 2) AS score
               FROM range({cases * depth}) t(i)"""
    con.execute(f"""COPY (SELECT case_id, 'Q0', document_id, rank, score, 'bench' FROM ({rows}))
                    TO '{root / "run.trec"}' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')""")
    con.execute(f"COPY ({rows}) TO '{folder / 'results.parquet'}' (FORMAT parquet)")


def _child(db: Path, run: Path) -> None:
    from ragtriage.store import connect
    from ragtriage.store.byo import LoadRequest, RunSource, load_inputs

    con = connect(db)
    t0 = time.perf_counter()
    load_inputs(con, LoadRequest(runs=[RunSource(run)]))
    print(json.dumps({"seconds": time.perf_counter() - t0}))


def _fresh_store(root: Path) -> Path:
    db = root / "timed.duckdb"
    shutil.copy(root / "base.duckdb", db)
    wal = root / "base.duckdb.wal"
    if wal.exists():
        shutil.copy(wal, root / "timed.duckdb.wal")
    return db


def _timed(root: Path, run: Path) -> float:
    db = _fresh_store(root)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(db), str(run)], check=True, capture_output=True, text=True
    )
    db.unlink()
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def _command(root: Path, run: Path) -> float:
    """Wall time of the whole ``ragtriage load`` process."""
    db = _fresh_store(root)
    cli = [sys.executable, "-m", "ragtriage.cli", "load", "--db", str(db), "--run", str(run), "--no-precompute"]
    t0 = time.perf_counter()
    subprocess.run(cli, check=True, capture_output=True)
    seconds = time.perf_counter() - t0
    db.unlink()
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-trec-bench"))
    ap.add_argument("--child", nargs=2, type=Path)
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    root: Path = args.dir
    if not (root / "run.trec").exists():
        t0 = time.perf_counter()
        generate(root, args.cases, args.depth)
        print(f"generated {args.cases * args.depth:,} run lines in {time.perf_counter() - t0:.1f} s")
    from ragtriage.store import connect
    from ragtriage.store.byo import LoadRequest, load_inputs

    (root / "base.duckdb").unlink(missing_ok=True)
    con = connect(root / "base.duckdb")
    load_inputs(con, LoadRequest(qrels=root / "qrels.txt"))
    con.close()
    n = args.cases * args.depth
    params = {"cases": args.cases, "depth": args.depth, "repeat": args.repeat}
    rec = Recorder("trec-load", params, shared=not args.quiet_machine)
    rec.note("TREC and Parquet loads alternate, each into a fresh copy of a store holding the qrels; medians.")
    for label, measure in (("`ragtriage load` command", _command), ("load_inputs in-process", _timed)):
        trec, parquet = [], []
        for _ in range(args.repeat):
            trec.append(measure(root, root / "run.trec"))
            parquet.append(measure(root, root / "run"))
        mt, mp = statistics.median(trec), statistics.median(parquet)
        print(f"{label}:")
        print(f"  TREC run    ({n:,} lines): median {mt:.2f} s over {[round(x, 2) for x in trec]}")
        print(f"  Parquet run ({n:,} rows):  median {mp:.2f} s over {[round(x, 2) for x in parquet]}")
        print(f"  ratio TREC / Parquet: {mt / mp:.2f}")
        rec.add(rows=n, name=f"{label}: TREC run", seconds=mt, vs_parquet=mt / mp)
        rec.add(rows=n, name=f"{label}: Parquet run", seconds=mp)
    rec.write()


if __name__ == "__main__":
    main()
