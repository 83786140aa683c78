"""The retrievers that produce the sample runs: BM25 (bm25s), LSA "dense" vectors, RRF fusion and a reranker.

They really rank the indexed chunks for every case, so every failure in the sample runs is an outcome of these
systems: vocabulary mismatch beats BM25, LSA blurs identifiers, the reranker trusts title words, and whatever the
ingestion dropped cannot be found at all. Scoring is vectorised with numpy over the whole index; filters are
boolean masks over the same index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN_PLUS, STOPWORDS_GERMAN
from sample_corpus_base import Chunk

STOPWORDS = sorted(set(STOPWORDS_EN_PLUS) | set(STOPWORDS_GERMAN))
TOKEN = re.compile(r"(?u)\b\w\w+\b")
IDENTIFIER = re.compile(r"\b(?:[A-Z]{1,4}-)?[A-Z]{0,4}\d{3,}(?:-\d+)*\b|\b[A-Z]{2,}-[A-Z0-9]+\b|\b\d+\.\d+\.\d+\b")
SCALAR_FILTERS = ("language", "region", "product", "doc_type")


def _stem(tok: str) -> str:
    """A deliberately crude suffix stripper so 'sensors' meets 'sensor' but 'accommodation' never meets 'hotel'."""
    for suf in ("ations", "ation", "ings", "ing", "ies", "es", "s", "ed"):
        if len(tok) > len(suf) + 3 and tok.endswith(suf):
            return tok[: -len(suf)]
    return tok


def terms(text: str) -> list[str]:
    stop = set(STOPWORDS)
    return [_stem(t) for t in TOKEN.findall(text.lower()) if t not in stop]


@dataclass
class Index:
    """The searchable chunks with their metadata as arrays, so a filter is one vectorised comparison."""

    chunks: list[Chunk]
    meta: list[dict[str, object]]
    headings: list[str]

    def __post_init__(self) -> None:
        self.n = len(self.chunks)
        col = {f: np.array([str(m.get(f)) for m in self.meta]) for f in (*SCALAR_FILTERS, "tenant")}
        self.columns = col
        self.acl = [frozenset(m["acl"] or ()) for m in self.meta]  # type: ignore[arg-type]
        self.start = np.array([str(m["effective_from"] or "0000-00-00") for m in self.meta])
        self.end = np.array([str(m["effective_to"] or "9999-12-31") for m in self.meta])
        self.texts = [
            f"{c.title}. {h}. {c.text}" if h != c.text else f"{c.title}. {c.text}"
            for c, h in zip(self.chunks, self.headings, strict=True)
        ]

    def mask(self, case: dict[str, object], applied: dict[str, bool], as_of: str | None = None) -> np.ndarray:
        """Which chunks the system may return for ``case`` under the filters this run applies.

        ``as_of`` is the date a system assumes when the case gives no ``effective_on`` (None: no date filter).
        """
        keep = np.ones(self.n, dtype=bool)
        principal = case.get("principal")
        if isinstance(principal, dict):
            if applied.get("acl"):
                groups = set(principal["groups"])
                keep &= np.array([bool(groups & a) for a in self.acl])
            if applied.get("tenant"):
                keep &= self.columns["tenant"] == principal["tenant"]
        filters = case.get("filters") or {}
        assert isinstance(filters, dict)
        for f in SCALAR_FILTERS:
            if f in filters and applied.get(f):
                keep &= self.columns[f] == filters[f]
        if filters.get("tenant") and applied.get("tenant"):
            keep &= self.columns["tenant"] == filters["tenant"]
        day = str(filters.get("effective_on") or as_of or "")
        if day and applied.get("effective_on"):
            keep &= (self.start <= day) & (self.end >= day)
        return keep


def top(scores: np.ndarray, keep: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` allowed positions by score, ties broken by index order (stable, so reproducible)."""
    allowed = np.flatnonzero(keep & (scores > 0))
    order = allowed[np.lexsort((allowed, -scores[allowed]))][:k]
    return order, scores[order]


class BM25:
    def __init__(self, index: Index, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.n = index.n
        self.model = bm25s.BM25(k1=k1, b=b)
        corpus = bm25s.tokenize(index.texts, stopwords=STOPWORDS, show_progress=False)
        self.model.index(corpus, show_progress=False)
        id_df = np.bincount(np.concatenate([np.unique(d) for d in corpus.ids]), minlength=len(corpus.vocab))
        self.df = {t: int(id_df[i]) for t, i in corpus.vocab.items()}

    def tokens(self, query: str) -> list[str]:
        return bm25s.tokenize([query], stopwords=STOPWORDS, return_ids=False, show_progress=False)[0]

    def scores(self, query: str) -> np.ndarray:
        toks = self.tokens(query)
        return np.asarray(self.model.get_scores(toks), dtype=float) if toks else np.zeros(self.n)

    def postings(self, query: str) -> int:
        return sum(self.df.get(t, 0) for t in self.tokens(query))


class LSA:
    """TF-IDF over stemmed terms, projected on the top singular vectors: a dense retriever without a download."""

    def __init__(self, index: Index, dims: int = 96) -> None:
        docs = [terms(t) for t in index.texts]
        vocab = sorted({t for d in docs for t in d})
        self.vocab = {t: i for i, t in enumerate(vocab)}
        tf = np.zeros((len(docs), len(vocab)))
        for i, d in enumerate(docs):
            ids, counts = np.unique([self.vocab[t] for t in d], return_counts=True)
            tf[i, ids] = 1 + np.log(counts)
        self.idf = np.log((1 + len(docs)) / (1 + (tf > 0).sum(axis=0))) + 1
        x = tf * self.idf
        x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-12
        u, s, vt = np.linalg.svd(x, full_matrices=False)
        sign = np.sign(vt[np.arange(dims), np.abs(vt[:dims]).argmax(axis=1)])  # fix SVD sign ambiguity
        self.proj = vt[:dims].T * sign  # terms x dims
        docs_vec = x @ self.proj
        self.docs = docs_vec / (np.linalg.norm(docs_vec, axis=1, keepdims=True) + 1e-12)
        self.dims = dims

    def scores(self, query: str) -> np.ndarray:
        q = np.zeros(len(self.vocab))
        for t in terms(query):
            if t in self.vocab:
                q[self.vocab[t]] += 1
        q = np.where(q > 0, 1 + np.log(np.maximum(q, 1)), 0) * self.idf
        v = q @ self.proj
        norm = np.linalg.norm(v)
        return self.docs @ (v / norm) if norm > 0 else np.zeros(self.docs.shape[0])


def rrf(rankings: list[np.ndarray], n: int, depth: int, k: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal-rank fusion of ranked index positions; returns the fused top ``depth``."""
    fused = np.zeros(n)
    for ranking in rankings:
        fused[ranking] += 1.0 / (k + np.arange(1, len(ranking) + 1))
    keep = fused > 0
    return top(fused, keep, depth)


class Reranker:
    """Deterministic cross-features: query-term coverage, heading/title match, exact identifier match."""

    def __init__(self, index: Index) -> None:
        self.body = [set(terms(t)) for t in index.texts]
        self.head = [set(terms(f"{c.title} {h}")) for c, h in zip(index.chunks, index.headings, strict=True)]
        self.raw = [t.lower() for t in index.texts]

    def score(self, query: str, positions: np.ndarray, prior: np.ndarray) -> np.ndarray:
        q = set(terms(query))
        ids = [i.lower() for i in IDENTIFIER.findall(query)]
        out = np.zeros(len(positions))
        for j, p in enumerate(positions):
            cover = len(q & self.body[p]) / len(q) if q else 0.0
            head = len(q & self.head[p]) / len(q) if q else 0.0
            ident = (sum(i in self.raw[p] for i in ids) / len(ids)) if ids else 0.5
            out[j] = 0.45 * cover + 0.15 * head + 0.25 * ident
        return out + 0.15 * prior / (prior.max() or 1.0)
