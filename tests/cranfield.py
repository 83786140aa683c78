"""A Cranfield-like collection as most IR teams hold it: a graded qrels file and two TREC runs, nothing else (no
corpus, no topics, no access rules, no splits, no run.json).

Cranfield's shape: 1,400 documents with numeric docnos, 120 of its 225 queries with ids like ``q001`` (an id with
digits, which no classifier may read as query text), graded judgements 1..4 (plus a few -1), lists 100 deep.
``better`` is ``worse`` with a relevant document moved up on about a third of the queries and down on about a
fifth, so its nDCG@10 is a little higher (about +0.013) with a paired p near 0.02, as between two tuned BM25
settings.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

SEED = 1400
QUERIES = 120
DOCS = 1400
DEPTH = 100


@dataclass(frozen=True)
class Cranfield:
    qrels: Path
    better: Path
    worse: Path
    qrels_rows: dict[str, dict[str, int]]
    runs: dict[str, dict[str, list[str]]]  # run name -> qid -> docnos in rank order


def _lists(rnd: random.Random, judged: dict[str, int]) -> tuple[list[str], list[str]]:
    """The worse run's list and the better one's: the same documents, the better with one relevant document of
    the worse list's top 30 moved up (or, rarely, one in the top 10 moved down)."""
    pool = [str(d) for d in rnd.sample(range(1, DOCS + 1), DEPTH + 40)]
    relevant = [d for d in judged if judged[d] > 0]
    found = [d for d in relevant if rnd.random() < 0.7]
    others = [d for d in pool if d not in judged][: DEPTH - len(found)]
    worse = others[:]
    for d in found:
        worse.insert(min(int(rnd.expovariate(1 / 8)), len(worse)), d)
    worse = worse[:DEPTH]
    better = worse[:]
    roll = rnd.random()
    in_top = [i for i, d in enumerate(better[:30]) if d in judged and judged[d] > 0]
    if roll < 0.3 and in_top:
        i = max(in_top, key=lambda j: (judged[better[j]], j))
        better.insert(max(0, i - rnd.randint(2, 6)), better.pop(i))
    elif roll > 0.82 and in_top and in_top[0] < 10:
        i = in_top[0]
        better.insert(i + rnd.randint(1, 4), better.pop(i))
    return worse, better


def write(folder: Path, seed: int = SEED) -> Cranfield:
    """The qrels and both runs under ``folder`` (``qrels.txt``, ``better.trec``, ``worse.trec``)."""
    rnd = random.Random(seed)
    qids = [f"q{q:03d}" for q in sorted(rnd.sample(range(1, 226), QUERIES))]
    qrels: dict[str, dict[str, int]] = {}
    runs: dict[str, dict[str, list[str]]] = {"better": {}, "worse": {}}
    for q in qids:
        docs = [str(d) for d in rnd.sample(range(1, DOCS + 1), rnd.randint(3, 14))]
        qrels[q] = {d: rnd.choices([-1, 1, 2, 3, 4], weights=[2, 10, 8, 5, 3])[0] for d in docs}
        runs["worse"][q], runs["better"][q] = _lists(rnd, qrels[q])
    folder.mkdir(parents=True, exist_ok=True)
    qrels_path = folder / "qrels.txt"
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q in qids for d, g in qrels[q].items()))
    paths = {}
    for name, lists in runs.items():
        paths[name] = folder / f"{name}.trec"
        paths[name].write_text(
            "".join(
                f"{q} Q0 {d} {r} {DEPTH + 1 - r:.1f} {name}\n" for q in qids for r, d in enumerate(lists[q], start=1)
            )
        )
    return Cranfield(qrels_path, paths["better"], paths["worse"], qrels, runs)


def write_beir_qrels(path: Path, qrels: dict[str, dict[str, int]]) -> Path:
    """The judgements as a BEIR ``qrels/test.tsv`` (a header line, then query-id, corpus-id, score)."""
    rows = "".join(f"{q}\t{d}\t{g}\n" for q, docs in qrels.items() for d, g in docs.items())
    path.write_text("query-id\tcorpus-id\tscore\n" + rows)
    return path


def write_json_run(path: Path, lists: dict[str, list[str]]) -> Path:
    """A run as pytrec_eval / ranx hold it: ``{qid: {docno: score}}``, the score falling with the rank."""
    import json

    path.write_text(json.dumps({q: {d: float(DEPTH - i) for i, d in enumerate(docs)} for q, docs in lists.items()}))
    return path
