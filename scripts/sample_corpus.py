"""The whole sample corpus and the simulated ingestion that decides what the retrievers' index really holds.

The manifest (documents.jsonl) is the corpus snapshot; the index is what a crawler and parser made of it. The
difference is a realistic ingestion gap: the SharePoint crawler failed on two PDFs, the PDF parser dropped the
table chunks of one manual, and two chunks of a retired FAQ linger in the index after leaving the snapshot.
"""

from __future__ import annotations

import random

import sample_manuals
import sample_policies
import sample_support
from sample_corpus_base import Chunk, Corpus, Doc

FAILED_PDFS = ("man-bs40", "ds-bg200")
TABLES_DROPPED_FROM = ("man-bg200",)


def build_corpus(seed: int) -> Corpus:
    rng = random.Random(seed)
    corpus = Corpus()
    sample_policies.build(corpus)
    sample_manuals.build(corpus)
    sample_support.build(corpus, rng)
    corpus.seal()
    return corpus


def retired_faq() -> Doc:
    """A help page deleted from the knowledge base but still in the index (the index was not rebuilt)."""
    d = Doc(
        alias="legacy",
        document_id="faq-legacy-vpn",
        title="Legacy VPN FAQ (retired)",
        doc_type="faq",
        source_system="zendesk-guide",
        acl=["all-staff"],
        updated_at="2022-06-01T12:00:00",
        version="2022",
    )
    d.section("How do I connect to the VPN?").body(
        "Q: How do I connect to the VPN? A: Use the Cisco AnyConnect client and connect to "
        "legacy-vpn.halvorsen.example with your Windows password and an RSA token code.",
        "vpn",
    )
    return d


def indexed_chunks(corpus: Corpus) -> tuple[list[Chunk], dict[str, dict[str, object]]]:
    """Chunks the retrievers can find, with the manifest metadata (or the stale doc's own) used for filtering."""
    meta: dict[str, dict[str, object]] = {}
    chunks: list[Chunk] = []
    for doc in [*corpus.docs, retired_faq()]:
        if doc.document_id in FAILED_PDFS:
            continue
        for row, chunk in zip(doc.rows(), doc.chunks, strict=True):
            if doc.document_id in TABLES_DROPPED_FROM and chunk.chunk_kind == "table":
                continue
            chunks.append(chunk)
            meta[chunk.chunk_id] = row
    return chunks, meta
