"""Benchmark: the recorder's own overhead per request, against an HTTP server that answers at once.

    python bench/record_bench.py [--cases 170] [--concurrency 8] [--rounds 5]

A server process (standard library, keep-alive) answers every request instantly with ten hits, so a request's
time is the recorder's work plus the HTTP round trip. Each round times two things over the same requests:

- ``bare``: a plain ``httpx.AsyncClient`` loop at the same concurrency, posting the same JSON and parsing the
  answer: the round trip any harness pays, the "retriever's own time" as seen from a client;
- ``record``: ``ragtriage.record.record_run`` end to end (reading the cases, pre-flight, journal, the run folder).

Overhead = record − bare, in total and per request. The bar (issue 19): under 3 s for 170 cases at concurrency 8.
The machine is shared, so medians over the rounds are printed; not a timed test. Every figure is also written to
bench/results/record-<time>.json (bench/results_json.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_json import Recorder

SERVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HITS = json.dumps({"results": [{"doc_id": f"d{i}", "chunk_id": f"d{i}#1", "score": 1.0 / (i + 1)} for i in range(10)]})
BODY = HITS.encode()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *a):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_dataset(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "dataset.json").write_text(json.dumps({"name": "bench", "version": "1", "unit": "chunk"}))
    principal = {"id": "u1", "groups": ["all-staff"], "tenant": "t"}
    cases = [{"id": f"q{i:04d}", "query": f"question {i} about hotels", "principal": principal} for i in range(n)]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    labels = [{"case_id": c["id"], "document_id": "d1", "chunk_id": "d1#1", "grade": 2} for c in cases]
    (root / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    return root


async def bare(url: str, n: int, concurrency: int) -> float:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as client:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            async with sem:
                r = await client.post(url, json={"query": f"question {i} about hotels", "k": 10})
                r.json()

        await one(-1)  # connection warm-up, as the recorder's pre-flight request
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - t0


def record(url: str, dataset: Path, out: Path, concurrency: int) -> tuple[float, float]:
    from ragtriage.record import RecordOptions, RecordPlan, record_run
    from ragtriage.record.build import HttpOptions, make_retriever, response_shape

    shape = response_shape("chunk", {"hits": "results", "id": "chunk_id", "document_id": "doc_id", "score": "score"})
    t0 = time.perf_counter()
    retriever = make_retriever(url, shape, HttpOptions(concurrency=concurrency))
    result = record_run(RecordPlan(dataset, out, RecordOptions(k=10, concurrency=concurrency), force=True), retriever)
    wall = time.perf_counter() - t0
    assert result.complete and result.outcome.errors == 0
    return wall, float(result.manifest["record"]["latency"]["p50_ms"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=170)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quiet-machine", action="store_true", help="record that nothing else ran on the machine")
    args = ap.parse_args()
    params = {"cases": args.cases, "concurrency": args.concurrency, "rounds": args.rounds, "hits": 10}
    rec = Recorder("record", params, shared=not args.quiet_machine)
    rec.note("An HTTP server on 127.0.0.1 answering every request at once; seconds are medians over the rounds.")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    url = f"http://127.0.0.1:{port}/search"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        with tempfile.TemporaryDirectory() as tmp:
            dataset = write_dataset(Path(tmp) / "ds", args.cases)
            bares, records, p50s = [], [], []
            for _ in range(args.rounds):
                bares.append(asyncio.run(bare(url, args.cases, args.concurrency)))
                wall, p50 = record(url, dataset, Path(tmp) / "run", args.concurrency)
                records.append(wall)
                p50s.append(p50)
    finally:
        server.terminate()
        server.wait()
    b, r = statistics.median(bares), statistics.median(records)
    n = args.cases
    print(f"{n} cases at concurrency {args.concurrency}, instant server, median of {args.rounds} rounds")
    print(f"  bare httpx loop       {b:7.3f} s   {1000 * b / n:6.2f} ms/request")
    p50 = statistics.median(p50s)
    print(f"  ragtriage record      {r:7.3f} s   {1000 * r / n:6.2f} ms/request   (recorded p50 latency {p50:.2f} ms)")
    print(
        f"  recorder overhead     {r - b:7.3f} s   {1000 * (r - b) / n:6.2f} ms/request   ratio record/bare {r / b:.2f}"
    )
    rec.add(name="bare httpx loop (peer)", seconds=b, ms_per_request=1000 * b / n)
    rec.add(name="ragtriage record", seconds=r, ms_per_request=1000 * r / n, recorded_p50_ms=p50, vs_bare=r / b)
    rec.add(name="recorder overhead (record - bare)", seconds=r - b, ms_per_request=1000 * (r - b) / n)
    rec.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
