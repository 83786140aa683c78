"""Benchmark: 100,000 cases x 100 results (10M result rows, Parquet) through load, metrics, ranx and pytrec_eval,
and the stored classification: classifying at load, then `failures --summary` and the TUI's Failures list read
from the store (medians of 5 on a shared machine).

Each phase runs in its own process so that its peak memory (ru_maxrss) is its own. Usage:

    python bench/metrics_bench.py [--cases 100000] [--depth 100] [--dir /tmp/ragtriage-bench] [--skip-reference]
                                  [--unit chunk|document]

``--unit document`` gives every document four consecutive chunks in each ranked list, so every list holds repeats
and takes the de-duplicating path of the metrics (the chunk default has none).

Not a timed test: it prints the figures, the ratios against the reference tools, and each phase's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from results_json import Recorder

KS = (3, 5, 10)
THRESHOLD = 2


def generate(root: Path, cases: int, depth: int, unit: str = "chunk") -> None:
    import duckdb

    ds, run = root / "dataset", root / "run"
    ds.mkdir(parents=True, exist_ok=True)
    run.mkdir(parents=True, exist_ok=True)
    (ds / "dataset.json").write_text(
        json.dumps({"name": "bench", "version": "1", "unit": unit, "relevance_threshold": THRESHOLD})
    )
    # document mode: unit u<n> belongs to document d<n // 8>, so a list (units 2 apart) shows each document 4 times
    doc = "'u' ||" if unit == "chunk" else "'d' || (("
    end = "" if unit == "chunk" else ") // 8)"
    (run / "run.json").write_text(json.dumps({"run_id": "bench", "k": depth}))
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT 'q' || i AS id, 'query ' || i AS query FROM range({cases}) t(i))
                    TO '{ds / "cases.parquet"}' (FORMAT parquet)""")
    # three labels per case: units hashed into a 200-unit window of the ranked list, grades 0..3
    con.execute(f"""COPY (SELECT 'q' || (i // 3) AS case_id, {doc} ((i // 3) * 7 + hash(i) % 200){end} AS document_id,
                           'u' || ((i // 3) * 7 + hash(i) % 200) AS chunk_id, CAST(hash(i * 31) % 4 AS INTEGER) AS grade
                    FROM range({cases * 3}) t(i))
                    TO '{ds / "labels.parquet"}' (FORMAT parquet)""")
    con.execute(f"""COPY (SELECT 'q' || (i // {depth}) AS case_id, 'final' AS stage,
                           CAST(i % {depth} + 1 AS INTEGER) AS rank,
                           {doc} ((i // {depth}) * 7 + (i % {depth}) * 2){end} AS document_id,
                           'u' || ((i // {depth}) * 7 + (i % {depth}) * 2) AS chunk_id,
                           1.0 / (i % {depth} + 1) AS score
                    FROM range({cases * depth}) t(i))
                    TO '{run / "results.parquet"}' (FORMAT parquet)""")


def phase_load(root: Path) -> dict[str, Any]:
    from ragtriage.store import connect, load_dataset, load_run

    db = root / "bench.duckdb"
    db.unlink(missing_ok=True)
    con = connect(db)
    t = time.perf_counter()
    load_dataset(con, root / "dataset")
    t_ds = time.perf_counter() - t
    t = time.perf_counter()
    load_run(con, root / "run")
    t_run = time.perf_counter() - t
    con.close()
    return {"load_dataset_s": t_ds, "load_run_s": t_run}


def phase_metrics(root: Path) -> dict[str, Any]:
    from ragtriage.metrics import summarize
    from ragtriage.store import connect

    con = connect(root / "bench.duckdb", read_only=True)
    out: dict[str, Any] = {}
    for attempt in ("cold", "warm"):
        t = time.perf_counter()
        rep = summarize(con, "bench", KS, measures=("P", "R", "RR", "nDCG"))
        out[f"metrics_{attempt}_s"] = time.perf_counter() - t
    out["means"] = {r.name: r.mean for r in rep.rows}
    out["zero_hit_rate"] = {str(k): v for k, v in rep.zero_hit_rate.items()}
    return out


def phase_measures(root: Path) -> dict[str, Any]:
    """Measures by name (``metrics --measure``): trec_eval's set at KS in both modes, on the loaded store."""
    from ragtriage.metrics import evaluate_run
    from ragtriage.metrics.measures import measures_for_ks
    from ragtriage.store import connect

    con = connect(root / "bench.duckdb", read_only=True)
    out: dict[str, Any] = {}
    for trec in (False, True):
        t = time.perf_counter()
        evaluate_run(con, "bench", measures_for_ks(KS, trec=True), trec_compat=trec)
        out[f"measures_{'trec' if trec else 'default'}_s"] = time.perf_counter() - t
    return out


def _dicts(root: Path) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    import pyarrow.parquet as pq

    qrels: dict[str, dict[str, int]] = {}
    unit = json.loads((root / "dataset" / "dataset.json").read_text())["unit"]
    col = "chunk_id" if unit == "chunk" else "document_id"
    lab = pq.read_table(root / "dataset" / "labels.parquet", columns=["case_id", col, "grade"])
    for c, u, g in zip(*(lab.column(i).to_pylist() for i in range(3)), strict=True):
        qrels.setdefault(c, {})[u] = max(g, qrels.get(c, {}).get(u, 0))
    run: dict[str, dict[str, float]] = {}
    res = pq.read_table(root / "run" / "results.parquet", columns=["case_id", col, "score"])
    # rows are in rank order, so setdefault keeps a repeated unit's first (best) score, as ragtriage does
    for c, u, s in zip(*(res.column(i).to_pylist() for i in range(3)), strict=True):
        run.setdefault(c, {}).setdefault(u, s)
    return qrels, run


def phase_pytrec(root: Path) -> dict[str, Any]:
    import pytrec_eval

    t = time.perf_counter()
    qrels, run = _dicts(root)
    t_build = time.perf_counter() - t
    measures = {
        f"P.{','.join(map(str, KS))}",
        f"recall.{','.join(map(str, KS))}",
        f"ndcg_cut.{','.join(map(str, KS))}",
        "recip_rank",
    }
    t = time.perf_counter()
    res = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=THRESHOLD).evaluate(run)
    t_eval = time.perf_counter() - t
    return {
        "pytrec_build_s": t_build,
        "pytrec_eval_s": t_eval,
        "pytrec_ndcg_cut_10": sum(v["ndcg_cut_10"] for v in res.values()) / len(qrels),
    }


def phase_ranx(root: Path) -> dict[str, Any]:
    from ranx import Qrels, Run, evaluate

    t = time.perf_counter()
    qrels, run = _dicts(root)
    q, r = Qrels(qrels), Run(run)
    t_build = time.perf_counter() - t
    metrics = [f"{m}@{k}-l{THRESHOLD}" for m in ("precision", "recall", "mrr") for k in KS]
    metrics += [f"ndcg_burges@{k}" for k in KS]
    out: dict[str, Any] = {"ranx_build_s": t_build}
    for attempt in ("cold", "warm"):  # the first call compiles numba kernels
        t = time.perf_counter()
        res = evaluate(q, r, metrics, make_comparable=True)
        out[f"ranx_{attempt}_s"] = time.perf_counter() - t
    out["ranx_ndcg_burges@10"] = res["ndcg_burges@10"]
    return out


def phase_classify(root: Path) -> dict[str, Any]:
    """What `ragtriage load` adds: classify the run once and store it (classify.refresh)."""
    from ragtriage.classify import refresh
    from ragtriage.store import connect

    con = connect(root / "bench.duckdb")
    t = time.perf_counter()
    refresh(con)
    out = {"classify_and_store_s": time.perf_counter() - t}
    out["failure_rows"] = con.execute("SELECT count(*) FROM classifications").fetchall()[0][0]
    con.close()
    return out


def _median(times: list[float]) -> float:
    return sorted(times)[len(times) // 2]


def _timed(fn: Any, repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return _median(times), out


def phase_failures(root: Path, repeats: int = 5) -> dict[str, Any]:
    """Reading the stored classification, medians of ``repeats``: `failures --summary` as a command (Python and
    CLI start-up included) and as the core call it makes; the Failures list as classify.failure_list (one row per
    failing case, what the view shows) with the notes overlay, and the TUI's current path (classify.failures with
    the evidence, then app.browse.lists.triage_table)."""
    import shutil

    from ragtriage.app.browse.lists import triage_table
    from ragtriage.classify import failure_list, failure_summary, failures
    from ragtriage.notes import NotesStore
    from ragtriage.store import connect

    db = root / "bench.duckdb"
    exe = shutil.which("ragtriage") or str(Path(sys.executable).parent / "ragtriage")
    argv = [exe, "failures", "--db", str(db), "--run", "bench", "--summary"]
    cli, _ = _timed(lambda: subprocess.run(argv, capture_output=True, check=True), repeats)

    def summary_core() -> Any:
        con = connect(db, read_only=True)
        try:
            return failure_summary(con, "bench")
        finally:
            con.close()

    core, summary = _timed(summary_core, repeats)
    con = connect(db, read_only=True)
    notes = NotesStore.open(db)

    def listing() -> int:
        cur = con.cursor()
        try:
            rows = failure_list(cur, "bench")
            cur.register("_n", notes.to_arrow("bench"))
            cur.register("_l", rows)
            return int(cur.sql("SELECT count(*) FROM _l LEFT JOIN _n USING (case_id)").fetchall()[0][0])
        finally:
            cur.close()

    def tui_path() -> int:
        cur = con.cursor()
        try:
            return int(triage_table(cur, failures(cur, "bench"), "bench", notes).num_rows)
        finally:
            cur.close()

    list_s, n = _timed(listing, repeats)
    tui_s, _ = _timed(tui_path, repeats)
    con.close()
    return {
        "failures_summary_cli_s": cli,
        "failures_summary_core_s": core,
        "failures_list_filled_s": list_s,
        "tui_current_failures_path_s": tui_s,
        "failing_cases": n,
        "cost": summary.costs.sentence(),
    }


PHASES = {
    "load": phase_load,
    "metrics": phase_metrics,
    "measures": phase_measures,
    "pytrec": phase_pytrec,
    "ranx": phase_ranx,
    "classify": phase_classify,
    "failures": phase_failures,
}


def run_phase(name: str, root: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--dir", str(root)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ragtriage-bench"))
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--unit", choices=("chunk", "document"), default="chunk")
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    a = ap.parse_args()
    if a.phase:
        out = PHASES[a.phase](a.dir)
        out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out))
        return
    t = time.perf_counter()
    generate(a.dir, a.cases, a.depth, a.unit)
    print(
        f"generated {a.cases} cases x {a.depth} results = {a.cases * a.depth:,} rows in "
        f"{time.perf_counter() - t:.1f}s under {a.dir}"
    )
    phases = ["load", "metrics", "measures", "classify", "failures"]
    phases += [] if a.skip_reference else ["pytrec", "ranx"]
    res = {p: run_phase(p, a.dir) for p in phases}
    params = {"cases": a.cases, "depth": a.depth, "unit": a.unit, "skip_reference": a.skip_reference}
    rec = Recorder("metrics", params, shared=not a.quiet_machine)
    rec.note("Each phase in its own process; *_s are wall seconds, peak_rss_mib the phase's own peak.")
    rec.add_phases(res)
    rec.write()
    for p, r in res.items():
        print(
            f"{p:8s} "
            + "  ".join(
                f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                for k, v in r.items()
                if k not in ("means", "zero_hit_rate", "cost")
            )
        )
    if "cost" in res.get("failures", {}):
        print(f"what each category costs: {res['failures']['cost']}")
    m = res["metrics"].get("metrics_warm_s")
    if m:
        print(f"metrics means: {json.dumps({k: round(v, 4) for k, v in res['metrics']['means'].items()})}")
        if "pytrec_eval_s" in res.get("pytrec", {}):
            p = res["pytrec"]
            total = p["pytrec_build_s"] + p["pytrec_eval_s"]
            print(f"pytrec_eval (build+eval) / ragtriage metrics: {total / m:.1f}x")
        if "ranx_warm_s" in res.get("ranx", {}):
            r = res["ranx"]
            print(
                f"ranx build / ragtriage metrics: {r['ranx_build_s'] / m:.1f}x; "
                f"ranx warm evaluation / ragtriage metrics: {r['ranx_warm_s'] / m:.1f}x"
            )


if __name__ == "__main__":
    main()
