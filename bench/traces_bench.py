"""Load N retriever spans from an OTLP/JSON export (one request per line, the Collector file exporter's layout)
against the same lists as a TREC run, each in a fresh process on a file store under the load's memory cap.

Shape: N spans of 5..15 documents (uneven depths), ids from a 10^9 space, scores with ties (3 decimals), a few
lists repeating a document; queries are the case texts of a qrels+topics dataset of N cases. The two loads run
in turn (``--rounds`` times, interleaved), with ``--peer-src OTHER/src`` a third: the traces load of another
ragtriage (e.g. the base of a change, ``git archive main src | tar -x -C /tmp/base``) in the same rounds. The
figures are each load's median CPU time (user+sys of its process, the measure that holds on a shared machine),
wall time and peak RSS, and the ratio of the CPU times; they are written to bench/results/ (``results_json``).

    python bench/traces_bench.py --spans 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openinference.semconv.trace import DocumentAttributes as Doc
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as Attr
from results_json import Recorder

SHAPE = "5-15 docs per span, ids from 10^9, 3-decimal scores, 2% lists repeat a doc, 500 spans per line"

LOAD = """
import sys
from pathlib import Path
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource, load_inputs
d, kind, src = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
con = connect(d / f"{kind}.duckdb")
req = LoadRequest(qrels=d / "qrels.txt", topics=d / "topics.tsv")
if kind == "trec":
    req.runs = [RunSource(src, run_id="r")]
else:
    req.traces, req.trace_run_id = [src], "r"
load_inputs(con, req)
con.close()
"""


def _kv(key: str, value: object) -> str:
    v = {"stringValue": value} if isinstance(value, str) else {"doubleValue": value}
    return json.dumps({"key": key, "value": v})


def generate(folder: Path, spans: int, per_line: int = 500) -> int:
    rnd = random.Random(3)
    rows = 0
    with (
        (folder / "traces.jsonl").open("w") as tr,
        (folder / "run.txt").open("w") as run,
        (folder / "qrels.txt").open("w") as qrels,
        (folder / "topics.tsv").open("w") as topics,
    ):
        batch: list[str] = []
        for i in range(spans):
            q = f"how do I configure feature {i} for region {i % 97}"
            topics.write(f"c{i}\t{q}\n")
            depth = rnd.randint(5, 15)
            docs = [f"D{rnd.randrange(10**9):09d}" for _ in range(depth)]
            if rnd.random() < 0.02:
                docs[-1] = docs[0]
            scores = sorted((round(rnd.random(), 3) for _ in docs), reverse=True)
            qrels.write(f"c{i} 0 {docs[rnd.randrange(depth)]} 1\n")
            attrs = [_kv(Attr.OPENINFERENCE_SPAN_KIND, Kind.RETRIEVER.value), _kv(Attr.INPUT_VALUE, q)]
            for k, (d, s) in enumerate(zip(docs, scores, strict=True)):
                attrs += [_kv(f"{Attr.RETRIEVAL_DOCUMENTS}.{k}.{Doc.DOCUMENT_ID}", d),
                          _kv(f"{Attr.RETRIEVAL_DOCUMENTS}.{k}.{Doc.DOCUMENT_SCORE}", s)]  # fmt: skip
                run.write(f"c{i} Q0 {d} {k + 1} {s} r\n")
            rows += depth
            start = 1_700_000_000_000_000_000 + i * 1_000_000
            batch.append(
                f'{{"traceId":"{i:032x}","spanId":"{i:016x}","name":"retrieve","startTimeUnixNano":"{start}",'
                f'"endTimeUnixNano":"{start + 7_000_000}","attributes":[{",".join(attrs)}]}}'
            )
            if len(batch) == per_line or i == spans - 1:
                tr.write('{"resourceSpans":[{"resource":{"attributes":[' + _kv("service.name", "rag") + ']},'
                         '"scopeSpans":[{"spans":[' + ",".join(batch) + "]}]}]}\n")  # fmt: skip
                batch = []
    return rows


def timed(folder: Path, kind: str, src: Path, peer_src: Path | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak MiB) of one load in a fresh process (of ``peer_src``'s ragtriage if
    given)."""
    for db in folder.glob(f"{kind}.duckdb*"):
        db.unlink()
    env = {**os.environ, "PYTHONPATH": str(peer_src)} if peer_src else None
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", LOAD, str(folder), kind, str(src)], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"{kind} load failed ({status})")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=1, help="interleaved runs of both loads (medians are kept)")
    ap.add_argument("--peer-src", type=Path, help="src folder of another ragtriage whose traces load runs beside")
    args = ap.parse_args()
    params = {"spans": args.spans, "rounds": args.rounds, "shape": SHAPE, "peer_src": str(args.peer_src)}
    rec = Recorder("traces", params)
    with tempfile.TemporaryDirectory(prefix="traces-bench-") as tmp:
        folder = Path(tmp)
        rows = generate(folder, args.spans)
        size = (folder / "traces.jsonl").stat().st_size
        runs: dict[str, list[tuple[float, float, float]]] = {"trec": [], "traces": [], "peer": []}
        for _ in range(args.rounds):
            runs["trec"].append(timed(folder, "trec", folder / "run.txt"))
            runs["traces"].append(timed(folder, "traces", folder / "traces.jsonl"))
            if args.peer_src:
                runs["peer"].append(timed(folder, "traces", folder / "traces.jsonl", args.peer_src))
    trec_s, trec_cpu, trec_mb = (statistics.median(x) for x in zip(*runs["trec"], strict=True))
    trace_s, trace_cpu, trace_mb = (statistics.median(x) for x in zip(*runs["traces"], strict=True))
    rec.add(case="TREC run", name="ragtriage load (TREC)", rows=rows, seconds=round(trec_s, 2),
            cpu_seconds=round(trec_cpu, 2), peak_mib=round(trec_mb))  # fmt: skip
    rec.add(
        case="OTLP/JSON spans",
        name="ragtriage load --traces",
        rows=rows,
        bytes=size,
        seconds=round(trace_s, 2),
        cpu_seconds=round(trace_cpu, 2),
        peak_mib=round(trace_mb),
        ratio_to_trec=round(trace_cpu / trec_cpu, 2),
        wall_ratio_to_trec=round(trace_s / trec_s, 2),
    )
    if args.peer_src:
        peer_s, peer_cpu, peer_mb = (statistics.median(x) for x in zip(*runs["peer"], strict=True))
        rec.add(case="OTLP/JSON spans, peer src", name="ragtriage load --traces (peer)", rows=rows, bytes=size,
                seconds=round(peer_s, 2), cpu_seconds=round(peer_cpu, 2), peak_mib=round(peer_mb),
                ratio_to_trec=round(peer_cpu / trec_cpu, 2), wall_ratio_to_trec=round(peer_s / trec_s, 2))  # fmt: skip
        print(f"peer traces {peer_cpu:.1f} s CPU ({peer_s:.1f} s wall, {peer_mb:.0f} MiB): "
              f"{peer_cpu / trec_cpu:.2f}x CPU")  # fmt: skip
    trec = f"TREC {trec_cpu:.1f} s CPU ({trec_s:.1f} s wall, {trec_mb:.0f} MiB)"
    traces = f"traces {trace_cpu:.1f} s CPU ({trace_s:.1f} s wall, {trace_mb:.0f} MiB)"
    print(f"{rows:,} rows: {trec}; {traces}: {trace_cpu / trec_cpu:.2f}x CPU")
    rec.write()


if __name__ == "__main__":
    main()
