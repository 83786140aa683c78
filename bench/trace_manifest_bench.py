"""What deriving the corpus manifest from trace metadata costs, against the trace load it follows.

One fresh process on a file store: ``ragtriage load --traces`` of N spans whose documents carry a
``document.metadata`` object (acl, tenant, updated_at, file_path, and a key no field reads), against a qrels+topics
dataset without documents, so the load ends by deriving the manifest; then the derivation alone, run again from
an empty manifest in a transaction of its own (rolled back). Figures: CPU time (user+sys of the process, all
threads), wall time, and the derivation's share of the load's CPU.

Shape: 5..15 documents per span, ids drawn from a space of N*5 documents (so a document recurs across spans, with
metadata that differs for 1 in 50 rows), 500 spans per line.

    python bench/trace_manifest_bench.py --spans 100000
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from openinference.semconv.trace import DocumentAttributes as Doc
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as Attr
from results_json import Recorder

SHAPE = "5-15 docs per span, ids from N*5 documents, metadata differing in 2% of rows, 500 spans per line"

MEASURE = """
import json, resource, sys, time
from pathlib import Path
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, load_inputs
from ragtriage.store.corpus_manifest import forget_derived
from ragtriage.store.trace_manifest import derive_manifest

def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime

d = Path(sys.argv[1])
con = connect(d / "t.duckdb")
c0, w0 = cpu(), time.perf_counter()
load_inputs(con, LoadRequest(qrels=d / "qrels.txt", topics=d / "topics.tsv", traces=[d / "traces.jsonl"],
                             trace_run_id="r"))
c1, w1 = cpu(), time.perf_counter()
load_cpu, load_s = c1 - c0, w1 - w0
con.execute("BEGIN TRANSACTION")
con.execute("DELETE FROM documents")
forget_derived(con)
c1, w1 = cpu(), time.perf_counter()
note = derive_manifest(con, "document", None, "r")
c2, w2 = cpu(), time.perf_counter()
con.execute("ROLLBACK")
n = con.execute("SELECT count(*) FROM documents").fetchall()[0][0]
con.close()
print(json.dumps({"load_cpu": load_cpu, "load_s": load_s, "derive_cpu": c2 - c1, "derive_s": w2 - w1,
                  "documents": n, "note": note}))
"""


def _attr(key: str, value: object) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value} if isinstance(value, str) else {"doubleValue": value}}


def _span(i: int, query: str, docs: list[str], rnd: random.Random) -> dict[str, Any]:
    """One OpenInference retriever span, each document with a metadata object (2% of them with a changed date)."""
    attrs = [_attr(Attr.OPENINFERENCE_SPAN_KIND, Kind.RETRIEVER.value), _attr(Attr.INPUT_VALUE, query)]
    for k, d in enumerate(docs):
        n = int(d[1:])
        meta = {"file_path": f"/kb/{d}.md", "acl": [f"g{n % 13}", "staff"], "tenant": f"t{n % 3}",
                "updated_at": f"2024-0{1 + n % 9}-1{n % 10}T08:00:00Z", "page": n % 40}  # fmt: skip
        if rnd.random() < 0.02:
            meta["updated_at"] = "2024-12-01T00:00:00Z"
        prefix = f"{Attr.RETRIEVAL_DOCUMENTS}.{k}"
        attrs += [_attr(f"{prefix}.{Doc.DOCUMENT_ID}", d), _attr(f"{prefix}.{Doc.DOCUMENT_SCORE}", 1 - k / 20),
                  _attr(f"{prefix}.{Doc.DOCUMENT_METADATA}", json.dumps(meta))]  # fmt: skip
    start = 1_700_000_000_000_000_000 + i * 1_000_000
    return {"traceId": f"{i:032x}", "spanId": f"{i:016x}", "name": "retrieve", "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 7_000_000), "attributes": attrs}  # fmt: skip


def generate(folder: Path, spans: int, per_line: int = 500) -> int:
    """The export (one OTLP request of ``per_line`` spans per line), its topics and one qrel per topic."""
    rnd = random.Random(5)
    rows = 0
    resource = {"attributes": [_attr("service.name", "rag")]}
    with (
        (folder / "traces.jsonl").open("w") as tr,
        (folder / "qrels.txt").open("w") as qrels,
        (folder / "topics.tsv").open("w") as topics,
    ):
        for first in range(0, spans, per_line):
            batch = []
            for i in range(first, min(first + per_line, spans)):
                query = f"how do I configure feature {i} for region {i % 97}"
                docs = [f"D{rnd.randrange(spans * 5):09d}" for _ in range(rnd.randint(5, 15))]
                topics.write(f"c{i}\t{query}\n")
                qrels.write(f"c{i} 0 {rnd.choice(docs)} 1\n")
                batch.append(_span(i, query, docs, rnd))
                rows += len(docs)
            request = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": batch}]}]}
            tr.write(json.dumps(request) + "\n")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=100_000)
    args = ap.parse_args()
    rec = Recorder("trace-manifest", {"spans": args.spans, "shape": SHAPE})
    with tempfile.TemporaryDirectory(prefix="trace-manifest-bench-") as tmp:
        folder = Path(tmp)
        rows = generate(folder, args.spans)
        out = subprocess.run([sys.executable, "-c", MEASURE, str(folder)], check=True, capture_output=True, text=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    fig = json.loads(out.stdout.strip().splitlines()[-1])
    share = fig["derive_cpu"] / fig["load_cpu"]
    rec.add(case="load with derivation", name="ragtriage load --traces (derives the manifest)", rows=rows,
            seconds=round(fig["load_s"], 2), cpu_seconds=round(fig["load_cpu"], 2), peak_mib=round(peak))  # fmt: skip
    rec.add(case="derivation alone", name="store.trace_manifest.derive_manifest", rows=rows,
            documents=fig["documents"], seconds=round(fig["derive_s"], 2), cpu_seconds=round(fig["derive_cpu"], 2),
            share_of_load_cpu=round(share, 3))  # fmt: skip
    print(f"{rows:,} rows, {fig['documents']:,} derived documents: load {fig['load_cpu']:.1f} s CPU "
          f"({fig['load_s']:.1f} s wall, peak {peak:.0f} MiB); derivation {fig['derive_cpu']:.1f} s CPU "
          f"({fig['derive_s']:.1f} s wall) = {share:.0%} of the load's CPU")  # fmt: skip
    rec.write()


if __name__ == "__main__":
    main()
