"""The sample's retrievers as something `ragtriage record` can call: Python callables and a tiny HTTP server.

    ragtriage record --dataset sample_runs/dataset --out runs/bm25-live \\
        --retriever python:scripts/sample_retriever.py:bm25 --k 10
    python scripts/sample_retriever.py --port 8080          # POST /search/bm25, /search/dense, /search/hybrid-rerank

Each callable ranks with the very code that produced ``sample_runs/runs/<system>`` (``sample_systems.run_case``
over the same index, built once on first use with seed 7), so recording it reproduces the bundled run's
results; its latency is now measured, not modelled. Like the bundled runs, each system applies its own filter
set to the principal and filters the recorder passes. Needs the ``sample`` extra (bm25s).

The HTTP server takes ``{"query", "k", "principal", "filters", "case_id"}`` and answers
``{"results": [...], "candidates": [...], "status", "fallback", "index_version"}``; it uses only the standard
library (``http.server``), one thread per connection.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_sample_runs import build_index  # noqa: E402
from sample_corpus import build_corpus, indexed_chunks  # noqa: E402
from sample_systems import SYSTEMS, Engines, System, run_case  # noqa: E402

SEED = 7
INDEX_VERSION = "idx-2024-11-28"
_LOCK = threading.Lock()


@cache
def engines() -> Engines:
    return Engines(build_index(*indexed_chunks(build_corpus(SEED))))


def _system(run_id: str) -> System:
    return next(s for s in SYSTEMS if s.run_id == run_id)


def search(run_id: str, query: str, principal: Any = None, filters: Any = None, case_id: str = "") -> dict[str, Any]:
    """One case through one sample system: its final and candidate hits, status and fallback flag."""
    case = {"id": case_id, "query": query, "principal": principal, "filters": filters}
    with _LOCK:  # the index is built once; the engines are not meant for concurrent use
        rows, event = run_case(_system(run_id), engines(), case, SEED)
    hits = [{k: v for k, v in r.items() if k not in ("case_id", "stage", "rank")} for r in rows]
    stages = [r["stage"] for r in rows]
    return {
        "results": [h for h, s in zip(hits, stages, strict=True) if s == "final"],
        "candidates": [h for h, s in zip(hits, stages, strict=True) if s == "candidate"] or None,
        "status": event["status"],
        "fallback": event["fallback"],
        "index_version": INDEX_VERSION,
    }


def bm25(query: str, principal: Any = None, filters: Any = None, case_id: str = "") -> dict[str, Any]:
    return search("bm25", query, principal, filters, case_id)


def dense(query: str, principal: Any = None, filters: Any = None, case_id: str = "") -> dict[str, Any]:
    return search("dense", query, principal, filters, case_id)


def hybrid(query: str, principal: Any = None, filters: Any = None, case_id: str = "") -> dict[str, Any]:
    return search("hybrid-rerank", query, principal, filters, case_id)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        name = self.path.rstrip("/").rsplit("/", 1)[-1]
        if not self.path.startswith("/search/") or name not in {s.run_id for s in SYSTEMS}:
            return self._send(404, {"error": f"unknown path {self.path}; use /search/<system>"})
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            answer = search(name, str(body["query"]), body.get("principal"), body.get("filters"), body.get("case_id"))
        except (KeyError, ValueError, TypeError) as exc:
            return self._send(400, {"error": f"bad request: {exc}"})
        self._send(200, answer)

    def _send(self, status: int, obj: object) -> None:
        data = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return None


def serve(port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server on ``port`` (0 picks a free one: read ``server.server_port``); call ``serve_forever``."""
    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    engines()  # build the index before the first request, not during it
    server = serve(args.port, args.host)
    print(f"sample retrievers on http://{args.host}:{server.server_port}/search/<bm25|dense|hybrid-rerank>", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
