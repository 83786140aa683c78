"""``ragtriage load --no-precompute`` against the write floor, interleaved, on realistic data.

    python bench/load_floor_bench.py [--sizes 1M,10M] [--repeat 3] [--dir /tmp/ragtriage-loadfloor] [--keep]
                                     [--peer-src OTHER/src] [--load-only]

The write floor is DuckDB alone: ``CREATE TABLE ... AS`` of the same Parquet files (cases, labels, results) into
a new store file, in a process of its own. The load is the same files through ``ragtriage load --no-precompute``
(read, every rule checked, written in one transaction). Both are whole processes, run one after the other in each
round so a busy machine slows both alike; each figure is the median of ``--repeat`` rounds of wall seconds and
CPU seconds (user + sys of the child), with peak RSS (MiB) and the load average beside them. A third row times
the store-less one-off ``ragtriage metrics --qrels --run`` on the TREC text of the same rows beside DuckDB's read
of those files (a count over both), the floor of item 3 of the same issue. ``--peer-src`` times the same two
ragtriage commands of another source tree in the same rounds (``git archive BASE src | tar -x -C /tmp/base`` and
``--peer-src /tmp/base/src``), so a change is measured against its base under the same load. ``--load-only`` leaves
out the read floor and the one-off rows (a change to the load alone is measured in a third of the time).

The data looks like a real run, not like ``d0, d2, d4``: N cases x 100 results, document ids drawn from a million
(so about one list in 200 repeats a document, as a real retriever's lists do), real-valued scores with ties at
the tail, five labels per case on documents partly inside the list, and a few thousand judgments given twice by
a second annotator (Parquet only: TREC qrels hold one annotator, and a line given twice is refused). Figures
go to bench/results/load-floor-*.json (``--load-only``: load-floor-loads-*.json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_json import Recorder

DEPTH = 100
LABELS_PER_CASE = 5
ID_SPACE = 1_000_000
RAGTRIAGE = str(Path(sys.executable).with_name("ragtriage"))
GNU_TIME = "/usr/bin/time"  # Debian package `time`
SHAPE = (
    f"N cases x {DEPTH} results; document ids drawn from {ID_SPACE:,}; scores real-valued with ties; "
    f"~1 list in 200 repeats a document; {LABELS_PER_CASE} labels per case; "
    "rows/3000 judgments by a second annotator (Parquet)"
)


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def generate(root: Path, rows: int) -> None:
    """Parquet (dataset folder + run folder) and TREC text (qrels + run) of the same realistic collection."""
    import duckdb

    cases = rows // DEPTH
    ds, run = root / "dataset", root / "run"
    for folder in (ds, run):
        folder.mkdir(parents=True, exist_ok=True)
    (ds / "dataset.json").write_text(
        json.dumps({"name": "floor", "version": "1", "unit": "document", "relevance_threshold": 1})
    )
    (run / "run.json").write_text(json.dumps({"run_id": "run", "k": 10, "candidate_k": DEPTH}))
    con = duckdb.connect()
    con.execute(f"SET temp_directory='{root / 'tmp'}'")
    con.execute("SET enable_progress_bar = false")
    doc = f"'doc-' || lpad(CAST(hash({{}}) % {ID_SPACE} AS VARCHAR), 7, '0')"
    con.execute(f"""COPY (SELECT 'q' || (hash(i) % 100000000) || '-' || i AS id, 'query number ' || i AS query
                    FROM range({cases}) t(i)) TO '{ds / "cases.parquet"}' (FORMAT parquet)""")
    # a label's document: often one of the case's first 150 results (so some lie beyond the list of 100)
    repeated = max(rows // 3000, 1)
    con.execute(f"""COPY (
        WITH lab AS (SELECT 'q' || (hash(c) % 100000000) || '-' || c AS case_id,
                            {doc.format(f"c * {DEPTH} + hash(i * 31) % 150 + 7")} AS document_id,
                            CAST(hash(i * 17) % 4 AS INTEGER) AS grade, i
                     FROM (SELECT i // {LABELS_PER_CASE} AS c, i FROM range({cases * LABELS_PER_CASE}) t(i)))
        SELECT case_id, document_id, grade, 'a1' AS annotator FROM lab QUALIFY row_number() OVER
            (PARTITION BY case_id, document_id ORDER BY i) = 1
        UNION ALL
        SELECT case_id, document_id, grade, 'a2' FROM lab WHERE i < {repeated} * {LABELS_PER_CASE * 7}
            AND i % {LABELS_PER_CASE * 7} = 0)
        TO '{ds / "labels.parquet"}' (FORMAT parquet)""")
    con.execute(f"""COPY (SELECT 'q' || (hash(i // {DEPTH}) % 100000000) || '-' || (i // {DEPTH}) AS case_id,
                           'final' AS stage, CAST(i % {DEPTH} + 1 AS INTEGER) AS rank,
                           {doc.format("i + 7")} AS document_id,
                           round(25.0 * exp(-(i % {DEPTH}) / 30.0) + (hash(i) % 7) / 1000.0, 2) AS score
                    FROM range({cases * DEPTH}) t(i))
                    TO '{run / "results.parquet"}' (FORMAT parquet)""")
    # TREC qrels: one line per (query, document); a line given twice is refused by the load, as by trec_eval
    con.execute(f"""COPY (SELECT case_id, 0, document_id, grade FROM '{ds / "labels.parquet"}'
                          WHERE annotator = 'a1')
                    TO '{root / "qrels.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')""")
    con.execute(f"""COPY (SELECT case_id, 'Q0', document_id, rank, score, 'bm25' FROM '{run / "results.parquet"}')
                    TO '{root / "run.txt"}' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')""")
    con.close()


FLOOR_WRITE = """
import duckdb, sys
root, db = sys.argv[1], sys.argv[2]
con = duckdb.connect(db)
for name, path in (("cases", "dataset/cases"), ("labels", "dataset/labels"), ("results", "run/results")):
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM '{root}/{path}.parquet'")
con.close()
"""

FLOOR_READ = """
import duckdb, sys
root = sys.argv[1]
opts = "delim=' ', header=false, quote='', escape='', auto_detect=false"
q = duckdb.sql(f"SELECT count(*) FROM read_csv('{root}/qrels.txt', {opts}, columns={{'q': 'VARCHAR', "
               f"'i': 'VARCHAR', 'd': 'VARCHAR', 'g': 'INTEGER'}})").fetchall()
r = duckdb.sql(f"SELECT count(*), sum(s) FROM read_csv('{root}/run.txt', {opts}, columns={{'q': 'VARCHAR', "
               f"'z': 'VARCHAR', 'd': 'VARCHAR', 'r': 'INTEGER', 's': 'DOUBLE', 't': 'VARCHAR'}})").fetchall()
print(q, r)
"""


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the child, peak RSS MiB) of one run of ``cmd``; raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        proc = subprocess.run([GNU_TIME, "-f", "%M", "-o", rss.name, *cmd], capture_output=True, check=False, env=env)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}: {proc.stderr.decode()[-400:]}")
        peak = int(rss.read().split()[-1]) / 1024
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, peak


Command = tuple[list[str], dict[str, str] | None]


def commands(root: Path, db: Path, peer_src: Path | None, load_only: bool = False) -> dict[str, Command]:
    """Each measured command by name; with ``peer_src`` (a ``src`` folder of another ragtriage, e.g. the commit
    before a change) its ``load`` and ``metrics`` too, run by this interpreter with that folder first on the path.
    ``load_only``: the write floor and the loads alone."""
    py = sys.executable
    load = ["load", "--db", str(db), "--dataset", str(root / "dataset"), "--run", str(root / "run"), "--no-precompute"]
    metrics = ["metrics", "--qrels", str(root / "qrels.txt"), "--run", str(root / "run.txt"), "--measure", "nDCG@10"]
    cmds: dict[str, Command] = {
        "write floor: DuckDB CTAS of the Parquet": ([py, "-c", FLOOR_WRITE, str(root), str(db)], None),
        "ragtriage load --no-precompute": ([RAGTRIAGE, *load], None),
        "read floor: DuckDB read of the TREC files": ([py, "-c", FLOOR_READ, str(root)], None),
        "ragtriage metrics --qrels --run": ([RAGTRIAGE, *metrics], None),
    }
    if peer_src is not None:
        env = {**os.environ, "PYTHONPATH": str(peer_src)}
        cmds["peer ragtriage load --no-precompute"] = ([py, "-m", "ragtriage.cli", *load], env)
        cmds["peer ragtriage metrics --qrels --run"] = ([py, "-m", "ragtriage.cli", *metrics], env)
    if load_only:
        return {name: cmd for name, cmd in cmds.items() if "metrics" not in name and "read floor" not in name}
    return cmds


def measure(
    root: Path, repeat: int, peer_src: Path | None, load_only: bool = False
) -> dict[str, list[tuple[float, float, float]]]:
    """Every command once per round, ``repeat`` rounds (interleaved), each load into a new store file."""
    db = root / "store.duckdb"
    cmds = commands(root, db, peer_src, load_only)
    got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, (cmd, env) in cmds.items():
            for path in (db, db.with_name(db.name + ".wal")):
                path.unlink(missing_ok=True)
            got[name].append(timed(cmd, env))
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1M,10M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "ragtriage-loadfloor")
    ap.add_argument("--keep", action="store_true", help="keep the generated files (reused by the next run)")
    ap.add_argument("--peer-src", type=Path, help="src folder of another ragtriage to time beside this one")
    ap.add_argument("--load-only", action="store_true", help="time the write floor and the loads only")
    args = ap.parse_args()
    params = {"sizes": args.sizes, "repeat": args.repeat, "shape": SHAPE, "peer_src": str(args.peer_src)}
    if args.load_only:
        params["load_only"] = True
    # the loads alone are recorded apart, so docs/performance.md keeps showing the newest full table
    rec = Recorder("load-floor-loads" if args.load_only else "load-floor", params)
    print(SHAPE)
    for size in args.sizes.split(","):
        rows = parse_size(size)
        root = args.dir / size.strip()
        if not (root / "run.txt").exists():
            shutil.rmtree(root, ignore_errors=True)
            generate(root, rows)
        got = measure(root, args.repeat, args.peer_src, args.load_only)
        floors = {"load": "write floor", "metrics": "read floor"}
        medians = {n: [statistics.median(x[i] for x in runs) for i in range(3)] for n, runs in got.items()}
        for name, (wall, cpu, peak) in medians.items():
            kind = next((k for k in floors if f"ragtriage {k}" in name), None)
            peer = next((p for p in medians if kind and p.startswith(floors[kind])), None)
            ratio = f"  {wall / medians[peer][0]:.2f}x wall, {cpu / medians[peer][1]:.2f}x CPU" if peer else ""
            print(f"{size:>4} {name:49s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  {peak:6.0f} MiB{ratio}")
            rec.add(size=size, rows=rows, name=name, wall_s=wall, cpu_s=cpu, peak_mib=peak, runs=got[name])
        print(f"     load average {os.getloadavg()}")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    rec.write()


if __name__ == "__main__":
    main()
