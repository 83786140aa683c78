"""The four retrieval systems of the sample and how each one's run folder is produced.

Latency is a deterministic cost model, not a stopwatch, so the files are identical on every machine: each stage
costs a base plus a term proportional to the work it really did (postings touched by BM25, index size for the
vector scan, candidates reranked), with seeded log-normal noise. The hybrid system has a small seeded chance of a
cold index shard stalling a request; past its 400 ms budget it times out and falls back to its BM25 results.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import bm25s
import numpy as np
from sample_corpus_base import Chunk
from sample_retrievers import BM25, LSA, Index, Reranker, rrf, top

RUN_DATE = "2024-12-01"
RERANKER = "feature-reranker-v1 (coverage 0.45, heading 0.15, identifier 0.25, fusion prior 0.15)"
ALL = {
    "acl": True,
    "tenant": True,
    "language": True,
    "region": True,
    "product": True,
    "doc_type": True,
    "effective_on": True,
}


@dataclass(frozen=True)
class System:
    run_id: str
    kind: str  # bm25 | dense | hybrid
    k: int
    applied: dict[str, bool]
    candidate_k: int | None = None
    abstain_below: float | None = None
    stall_rate: float = 0.0
    budget_ms: float = 400.0
    as_of: str | None = None  # date assumed when a case has no effective_on
    notes: dict[str, object] = field(default_factory=dict)


SYSTEMS = (
    System(
        "bm25",
        "bm25",
        10,
        {**ALL, "effective_on": False},
        notes={"description": "BM25 over chunks; metadata filters except effective_on"},
    ),
    System(
        "dense",
        "dense",
        10,
        {**ALL, "language": False, "region": False},
        notes={"description": "LSA vectors (TF-IDF + truncated SVD, 96 dims), cosine; no language/region filter"},
    ),
    System(
        "hybrid-rerank",
        "hybrid",
        8,
        ALL,
        candidate_k=50,
        abstain_below=0.42,
        stall_rate=0.012,
        as_of=RUN_DATE,
        notes={"description": "RRF(bm25, dense) to depth 50, feature reranker, abstains on low top score"},
    ),
    System(
        "no-acl-filter",
        "hybrid",
        8,
        {**ALL, "acl": False, "tenant": False},
        candidate_k=50,
        abstain_below=0.42,
        as_of=RUN_DATE,
        notes={"description": "hybrid-rerank with the ACL and tenant filter switched off (misconfiguration)"},
    ),
)


class Engines:
    """One instance of each retriever over the shared index, built once for all four runs."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.bm25 = BM25(index)
        self.lsa = LSA(index)
        self.rerank = Reranker(index)


def _noise(seed: int, run_id: str, case_id: str) -> random.Random:
    return random.Random(f"{seed}:{run_id}:{case_id}")


def _result(
    case_id: str, stage: str, rank: int, chunk: Chunk, score: float, meta: dict[str, object] | None, snippet: bool
) -> dict[str, object]:
    row: dict[str, object] = {
        "case_id": case_id,
        "stage": stage,
        "rank": rank,
        "document_id": chunk.document_id,
        "chunk_id": chunk.chunk_id,
        "score": round(float(score), 6),
    }
    if snippet:
        row["snippet"] = chunk.text[:160]
        row["metadata"] = meta or {}
    return row


def run_case(
    sys: System, eng: Engines, case: dict[str, object], seed: int
) -> tuple[list[dict[str, object]], dict[str, object]]:
    """Rank one case with one system: its result rows (every stage) and its serving event."""
    idx, cid, query = eng.index, str(case["id"]), str(case["query"])
    keep = idx.mask(case, sys.applied, sys.as_of)
    rng = _noise(seed, sys.run_id, cid)
    bm25_ms = (2.0 + 0.01 * eng.bm25.postings(query)) * rng.lognormvariate(0, 0.35)
    dense_ms = (12.0 + 0.004 * idx.n) * rng.lognormvariate(0, 0.3)
    rows: list[dict[str, object]] = []
    status, timed_out, fallback, error = "ok", False, False, None

    def final(order: np.ndarray, scores: np.ndarray, extra: list[dict[str, object]] | None = None) -> None:
        for r, (p, s) in enumerate(zip(order, scores, strict=True), 1):
            c = idx.chunks[p]
            meta = {"title": c.title, "chunk_kind": c.chunk_kind, **(extra[r - 1] if extra else {})}
            rows.append(_result(cid, "final", r, c, s, meta, snippet=True))

    if sys.kind == "bm25":
        final(*top(eng.bm25.scores(query), keep, sys.k))
        latency = bm25_ms
    elif sys.kind == "dense":
        scores = eng.lsa.scores(query)
        if not scores.any():
            status, error = "error", "query embedding is all zeros (no known terms)"
        final(*top(scores, keep, sys.k))
        latency = dense_ms
    else:
        depth = sys.candidate_k or 50
        b_order, _ = top(eng.bm25.scores(query), keep, depth)
        d_order, _ = top(eng.lsa.scores(query), keep, depth)
        cand, fused = rrf([b_order, d_order], idx.n, depth)
        rows += [
            _result(cid, "candidate", r, idx.chunks[p], s, None, snippet=False)
            for r, (p, s) in enumerate(zip(cand, fused, strict=True), 1)
        ]
        rerank_ms = 0.9 * len(cand) * rng.lognormvariate(0, 0.3)
        stall = rng.uniform(380, 900) if rng.random() < sys.stall_rate else 0.0
        latency = max(bm25_ms, dense_ms) + rerank_ms + stall
        if latency > sys.budget_ms:
            timed_out = fallback = True
            error = f"reranker exceeded {sys.budget_ms:.0f} ms budget; served BM25 results"
            latency = sys.budget_ms + bm25_ms
            b_final, b_scores = top(eng.bm25.scores(query), keep, sys.k)
            final(b_final, b_scores, [{"fallback": "bm25"}] * len(b_final))
        elif len(cand):
            rs = eng.rerank.score(query, cand, fused)
            order = np.lexsort((np.arange(len(cand)), -rs))[: sys.k]
            if sys.abstain_below is not None and rs[order[0]] < sys.abstain_below:
                status = "insufficient_evidence"
            else:
                final(cand[order], rs[order], [{"candidate_rank": int(i) + 1} for i in order])
        else:
            status = "insufficient_evidence"
    n_final = sum(1 for r in rows if r["stage"] == "final")
    event = {
        "case_id": cid,
        "latency_ms": round(latency, 2),
        "timed_out": timed_out,
        "empty": n_final == 0,
        "fallback": fallback,
        "status": status,
        "error": error,
    }
    return rows, event


def run_manifest(
    sys: System, dataset_version: str, corpus_version: str, index: Index, manifest_chunks: int
) -> dict[str, object]:
    embedding = {"bm25": None, "dense": "lsa-tfidf-svd96 (trained on the index)", "hybrid": "lsa-tfidf-svd96"}
    return {
        "run_id": sys.run_id,
        "created_at": f"{RUN_DATE}T10:00:00Z",
        "dataset_version": dataset_version,
        "corpus_version": corpus_version,
        "index_version": "idx-2024-11-28",
        "embedding_model": embedding[sys.kind],
        "chunking": "one section element per chunk (heading, paragraph, list or table)",
        "reranker": RERANKER if sys.kind == "hybrid" else None,
        "k": sys.k,
        "candidate_k": sys.candidate_k,
        "filters_applied": sys.applied,
        "system": {
            **sys.notes,
            "retriever": {"bm25": "bm25s", "dense": "numpy LSA", "hybrid": "bm25s + numpy LSA, RRF k=60"}[sys.kind],
            "bm25s_version": bm25s.__version__ if sys.kind != "dense" else None,
            "bm25": {"k1": 1.5, "b": 0.75} if sys.kind != "dense" else None,
            "abstain_below": sys.abstain_below,
            "default_effective_on": sys.as_of,
            "timeout_budget_ms": sys.budget_ms if sys.kind == "hybrid" else None,
            "latency": "deterministic cost model (see sample_runs/README.md)",
            "index_chunks": index.n,
            "manifest_chunks": manifest_chunks,
        },
    }
