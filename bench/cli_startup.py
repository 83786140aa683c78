"""Benchmark: CLI start-up, and `ragtriage metrics` against a plain DuckDB query computing the same nDCG@10.

    python bench/cli_startup.py [--runs 7] [--cases 100000 --depth 100] [--dir /tmp/ragtriage-cli-bench]
                                [--skip-metrics] [--db STORE --run RUN]

Prints, as medians over ``--runs`` processes (the machine may be shared: medians, and ratios against a bare
interpreter and a bare typer import measured alongside):

- ``ragtriage --help`` wall time, ``python -c pass`` and ``python -c "import typer"`` for scale;
- ``python -X importtime`` of ``ragtriage --help`` summarised: total, the ten largest cumulative imports, and
  whether duckdb/pyarrow/numpy/textual were imported at all (they must not be);
- on a store of cases x depth result rows (10M by default, built like bench/metrics_bench.py):
  ``ragtriage metrics --k 10 --format json`` against one process running a plain DuckDB query for the same
  nDCG@10 (exponential gain, relevant = grade >= threshold, first occurrence of a unit, cases with a relevant
  label), both values printed so they can be seen to agree. Issue 14 asks for metrics within 2x of the query.

Not a timed test: it prints figures and ratios, and writes them to bench/results/cli-startup-<time>.json
(bench/results_json.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from installed import byte_compile  # noqa: E402  (bench/, on the path above)
from results_json import Recorder  # noqa: E402

HEAVY = ("duckdb", "pyarrow", "numpy", "textual")

PLAIN_NDCG = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
t = con.execute("SELECT relevance_threshold FROM current_dataset").fetchone()[0]
print(con.execute(f'''
WITH q AS (SELECT case_id, unit_id, grade FROM qrels),
rel AS (SELECT case_id FROM q GROUP BY case_id HAVING count(*) FILTER (WHERE grade >= {t}) > 0),
r AS (SELECT case_id, unit_id, rank FROM results WHERE run_id = '{sys.argv[2]}' AND stage = 'final' AND rank <= 10
      QUALIFY row_number() OVER (PARTITION BY case_id, unit_id ORDER BY rank) = 1),
p AS (SELECT case_id, unit_id, row_number() OVER (PARTITION BY case_id ORDER BY rank) AS pos FROM r),
dcg AS (SELECT p.case_id, sum((pow(2, q.grade) - 1) / log2(p.pos + 1)) AS dcg
        FROM p JOIN q USING (case_id, unit_id) WHERE p.pos <= 10 GROUP BY p.case_id),
ideal AS (SELECT case_id, sum((pow(2, grade) - 1) / log2(i + 1)) AS idcg FROM (
            SELECT case_id, grade, row_number() OVER (PARTITION BY case_id ORDER BY grade DESC) AS i
            FROM q WHERE grade > 0) WHERE i <= 10 GROUP BY case_id)
SELECT avg(coalesce(d.dcg, 0) / i.idcg) FROM rel JOIN ideal i USING (case_id) LEFT JOIN dcg d USING (case_id)
''').fetchone()[0])
"""


def _median_seconds(cmd: list[str], runs: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        t = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - t)
        out = res.stdout
    return statistics.median(times), out


def startup(runs: int, rec: Recorder) -> None:
    py = sys.executable
    ragtriage = str(Path(py).with_name("ragtriage"))
    bare, _ = _median_seconds([py, "-c", "pass"], runs)
    typer_only, _ = _median_seconds([py, "-c", "import typer"], runs)
    help_s, _ = _median_seconds([ragtriage, "--help"], runs)
    print(f"median of {runs}: python -c pass {bare:.3f} s; import typer {typer_only:.3f} s; --help {help_s:.3f} s")
    rec.add(name="python -c pass (peer)", seconds=bare)
    rec.add(name="python -c 'import typer' (peer)", seconds=typer_only)
    rec.add(name="ragtriage --help", seconds=help_s, vs_import_typer=help_s / typer_only)
    print(
        f"  --help minus bare interpreter: {help_s - bare:.3f} s; --help / (import typer): {help_s / typer_only:.2f}x"
    )
    code = (
        "import sys; sys.argv=['ragtriage','--help']\n"
        "from ragtriage.cli import main\ntry: main()\nexcept SystemExit: pass"
    )
    err = subprocess.run([py, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            rows.append((int(cumulative.strip()), name.rstrip()))
    top = [r for r in rows if not r[1].startswith("  ")]  # top-level imports carry the whole cost
    total = sum(c for c, _ in top) / 1e6
    top = [r for r in rows if r[1].strip() != "ragtriage.cli"]  # the largest below the package itself
    top = [r for r in rows if r[1].strip() != "ragtriage.cli"]  # the largest below the package itself
    heavy = sorted({n.strip().split(".")[0] for _, n in rows} & set(HEAVY))
    print(f"  importtime of --help: {total:.3f} s over {len(rows)} modules; heavy modules imported: {heavy or 'none'}")
    for cumulative, name in sorted(top, reverse=True)[:10]:
        print(f"    {cumulative / 1e6:7.3f} s  {name.strip()}")


def metrics_vs_duckdb(root: Path, cases: int, depth: int, runs: int, db: Path | None, run: str, rec: Recorder) -> None:
    import metrics_bench  # bench/metrics_bench.py: the same data generator and loader

    if db is None:
        db = root / "bench.duckdb"
        run = "bench"
    if not db.exists():
        t = time.perf_counter()
        metrics_bench.generate(root, cases, depth)
        metrics_bench.phase_load(root)
        print(f"built {cases * depth:,} result rows in {time.perf_counter() - t:.1f} s ({db})")
    py = sys.executable
    ragtriage = str(Path(py).with_name("ragtriage"))
    ours_s, ours = _median_seconds(
        [ragtriage, "metrics", "--db", str(db), "--run", run, "--k", "10", "--format", "json"], runs
    )
    plain_s, plain = _median_seconds([py, "-c", PLAIN_NDCG, str(db), run], runs)
    ndcg = next(r["mean"] for r in json.loads(ours)["rows"] if r["measure@k"] == "nDCG@10")
    print(f"{cases * depth:,} result rows, median of {runs} processes:")
    print(f"  ragtriage metrics --k 10: {ours_s:.3f} s (nDCG@10 {ndcg:.6f}, with P/R/RR/AP/Success/Judged and CIs)")
    print(f"  plain DuckDB nDCG@10 query: {plain_s:.3f} s (nDCG@10 {float(plain):.6f})")
    print(f"  ratio: {ours_s / plain_s:.2f}x")
    rows = f"{cases * depth:,}" if db is None or run == "bench" else str(db.name)
    rec.add(rows=rows, name="ragtriage metrics --k 10 (store)", seconds=ours_s, ndcg10=ndcg, vs_plain=ours_s / plain_s)
    rec.add(rows=rows, name="plain DuckDB nDCG@10 query (peer)", seconds=plain_s, ndcg10=float(plain))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-cli-bench"))
    ap.add_argument("--skip-metrics", action="store_true")
    ap.add_argument("--db", type=Path, help="an existing store to measure (e.g. one bench/scale_bench.py built)")
    ap.add_argument("--run", default="bench", help="with --db: the run to evaluate")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    a = ap.parse_args()
    params = {"runs": a.runs, "cases": a.cases, "depth": a.depth, "skip_metrics": a.skip_metrics}
    rec = Recorder("cli-startup", params, shared=not a.quiet_machine)
    rec.note("Whole processes; seconds are medians over `runs` processes.")
    rec.note(byte_compile(str(Path(sys.executable).with_name("ragtriage"))))
    startup(a.runs, rec)
    if not a.skip_metrics:
        a.dir.mkdir(parents=True, exist_ok=True)
        metrics_vs_duckdb(a.dir, a.cases, a.depth, a.runs, a.db, a.run, rec)
    rec.write()


if __name__ == "__main__":
    main()
