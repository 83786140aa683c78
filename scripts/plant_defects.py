"""Build a planted-defect test set from the sample: defects whose category is known, beside clean cases.

    python scripts/plant_defects.py OUT_DIR [--seed 17] [--per-kind 8]

From the sample dataset (sample_runs/dataset) it keeps the answerable cases an oracle run serves without any
failure (every relevant unit in the manifest, permitted, at most k/2 of them, no label annotators put two grades
apart: that is a latent dataset defect) and plants one defect per chosen case:

| kind | category | what is planted |
|---|---|---|
| index-dropped | ingestion | the document of a relevant unit is removed from every run (still in the manifest) |
| corpus-dropped | ingestion | the document of a relevant unit is removed from the manifest and from every run |
| pushed-below-k | ranking | k permitted, unjudged units are put above the relevant ones in the oracle's list |
| other-run-only | ranking | a relevant unit is dropped from the oracle's list; the second run still returns it |
| label-nonexistent | dataset | a relevant label is moved to a chunk id its document does not have |
| label-unpermitted | dataset | a relevant label is moved to a unit the principal may not see, which the second
  (unfiltered) run returns: a leaking run's retrieval that must never be cited as evidence |
| grades-lowered | dataset | every grade of the case is lowered to 0 |
| leak-added | security | a unit the principal may not see is added to the oracle's top k |

Writes OUT_DIR/dataset, OUT_DIR/runs/oracle (the run to classify, k=10), OUT_DIR/runs/unfiltered (the oracle's
lists without the acl filter) and OUT_DIR/planted.json ({case_id: {"kind", "category"}}; "clean" cases too).
Deterministic for a seed. tests/unit/test_planted_defects.py builds it in a tmp folder and scores the classifier.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

K = 10
KINDS = {
    "index-dropped": "ingestion",
    "corpus-dropped": "ingestion",
    "pushed-below-k": "ranking",
    "other-run-only": "ranking",
    "label-nonexistent": "dataset",
    "label-unpermitted": "dataset",
    "grades-lowered": "dataset",
    "leak-added": "security",
}
Row = dict[str, Any]


def _read(path: Path) -> list[Row]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _doc_of(unit: str) -> str:
    return unit.partition("#")[0]


def _write_run(root: Path, run_id: str, lists: dict[str, list[str]], acl_filter: bool) -> None:
    filters = {"acl": acl_filter, "tenant": acl_filter}
    (root / run_id).mkdir(parents=True, exist_ok=True)
    run = {"run_id": run_id, "k": K, "reranker": None, "candidate_k": None, "filters_applied": filters}
    (root / run_id / "run.json").write_text(json.dumps(run), encoding="utf-8")
    rows = [
        {"case_id": c, "stage": "final", "rank": i, "document_id": _doc_of(u), "chunk_id": u, "score": 1.0 - i / 100}
        for c in sorted(lists)
        for i, u in enumerate(lists[c], start=1)
    ]
    _write(root / run_id / "results.jsonl", rows)


def _write_dataset(root: Path, source: Path, cases: list[Row], labels: list[Row], documents: list[Row]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "dataset.json", root / "dataset.json")
    _write(root / "cases.jsonl", cases)
    _write(root / "labels.jsonl", labels)
    _write(root / "documents.jsonl", documents)


def _relevant_and_clean(source: Path, cases: list[Row], labels: list[Row]) -> tuple[dict[str, list[str]], set[str]]:
    """Each answerable case's relevant units (the store's effective grades), and the cases an oracle run serves
    with no failure at all, as the classifier itself judges them."""
    from ragtriage.classify import classify_run, unit_locations
    from ragtriage.store import connect, load_dataset, load_run

    with tempfile.TemporaryDirectory() as tmp:
        con = connect(Path(tmp) / "probe.duckdb")
        try:
            load_dataset(con, source)
            relevant: dict[str, list[str]] = defaultdict(list)
            rows = con.execute(
                """SELECT q.case_id, q.unit_id FROM qrels q JOIN cases c USING (case_id)
                   WHERE c.answerable AND q.grade >= (SELECT relevance_threshold FROM current_dataset)
                   ORDER BY q.case_id, q.grade DESC, q.unit_id"""
            ).fetchall()
            for case_id, unit in rows:
                relevant[case_id].append(unit)
            lists = {c: units for c, units in relevant.items() if len(units) <= K // 2}
            _write_run(Path(tmp) / "runs", "probe", lists, True)
            load_run(con, Path(tmp) / "runs" / "probe")
            failing = {r["case_id"] for r in classify_run(con, "probe", store=False).to_pylist()}
            # a label annotators put two grades apart is a latent dataset defect: such a case holds two defects
            disputed = {
                r[0] for r in con.execute("SELECT case_id FROM qrels WHERE max_grade - min_grade >= 2").fetchall()
            }
            located = unit_locations(con, "probe").to_pylist()
        finally:
            con.close()
    unfit = {r["case_id"] for r in located if not r["in_corpus"] or r["permitted"] is False} | disputed
    clean = {c for c in lists if c not in failing and c not in unfit}
    return dict(relevant), clean


def build(out: Path, source: Path, *, seed: int = 17, per_kind: int = 8) -> dict[str, Row]:
    """Write the planted set under ``out``; returns planted.json's content."""
    rng = random.Random(seed)
    cases = {c["id"]: c for c in _read(source / "cases.jsonl")}
    labels = _read(source / "labels.jsonl")
    documents = _read(source / "documents.jsonl")
    relevant, clean = _relevant_and_clean(source, list(cases.values()), labels)

    labelled: dict[str, set[str]] = defaultdict(set)
    for lab in labels:
        labelled[lab["case_id"]].add(lab.get("chunk_id") or lab["document_id"])
    owners: dict[str, set[str]] = defaultdict(set)  # document -> clean cases with a relevant unit in it
    for c in clean:
        for u in relevant[c]:
            owners[_doc_of(u)].add(c)

    def sees(case_id: str, doc: Row) -> bool:
        p = cases[case_id].get("principal")
        if not p:  # nothing to check against: every unit may be shown
            return True
        tenant_ok = not doc.get("tenant") or not p.get("tenant") or doc["tenant"] == p["tenant"]
        return tenant_ok and bool(set(doc.get("acl") or []) & set(p.get("groups") or []))

    pool = sorted(clean)
    rng.shuffle(pool)
    planted: dict[str, Row] = {}
    taken: set[str] = set()

    def pick(kind: str, fits: Any) -> list[str]:
        chosen = [c for c in pool if c not in taken and fits(c)][:per_kind]
        taken.update(chosen)
        for c in chosen:
            planted[c] = {"kind": kind, "category": KINDS[kind]}
        return chosen

    def own_document(c: str) -> bool:  # a relevant unit whose document no other kept case needs
        return any(owners[_doc_of(u)] == {c} for u in relevant[c])

    def has_principal(c: str) -> bool:
        return bool(cases[c].get("principal"))

    by_kind = {kind: pick(kind, own_document) for kind in ("index-dropped", "corpus-dropped")}
    for kind in ("pushed-below-k", "other-run-only", "label-nonexistent", "grades-lowered"):
        by_kind[kind] = pick(kind, lambda c: True)
    for kind in ("label-unpermitted", "leak-added"):
        by_kind[kind] = pick(kind, has_principal)
    for c in pool:
        if c not in taken:
            planted[c] = {"kind": "clean", "category": "clean"}

    kept = set(planted)
    oracle = {c: list(relevant[c]) for c in kept}
    other_only: dict[str, list[str]] = defaultdict(list)
    dropped_docs: set[str] = set()
    corpus_dropped: set[str] = set()
    moved: dict[tuple[str, str], str] = {}  # (case, unit) -> the unit the label now names
    lowered: set[str] = set(by_kind["grades-lowered"])
    units = [d.get("chunk_id") or d["document_id"] for d in documents]

    for c in by_kind["index-dropped"] + by_kind["corpus-dropped"]:
        doc = next(_doc_of(u) for u in relevant[c] if owners[_doc_of(u)] == {c})
        dropped_docs.add(doc)
        if c in by_kind["corpus-dropped"]:
            corpus_dropped.add(doc)

    def hidden_from(c: str) -> list[str]:
        """Units the case's principal may not see, of documents left in the manifest and the runs."""
        return [
            u
            for u, d in zip(units, documents, strict=True)
            if not sees(c, d) and u not in labelled[c] and d["document_id"] not in dropped_docs
        ]

    for c in by_kind["pushed-below-k"]:
        visible = [
            u
            for u, d in zip(units, documents, strict=True)
            if sees(c, d) and u not in labelled[c] and d["document_id"] not in dropped_docs
        ]
        oracle[c] = rng.sample(visible, K) + oracle[c]
    for c in by_kind["other-run-only"]:
        unit = oracle[c].pop()
        other_only[c].append(unit)
    for c in by_kind["label-nonexistent"]:
        unit = relevant[c][-1]
        moved[(c, unit)] = f"{_doc_of(unit)}#planted-{rng.randrange(10**6)}"
    for c in by_kind["label-unpermitted"]:
        unit = relevant[c][-1]
        moved[(c, unit)] = rng.choice(hidden_from(c))
        other_only[c].append(moved[(c, unit)])  # only the unfiltered run retrieves it: a leak
    for c in by_kind["leak-added"]:
        oracle[c].append(rng.choice(hidden_from(c)))

    def keep_unit(u: str) -> bool:
        return _doc_of(u) not in dropped_docs

    oracle = {c: [u for u in lst if keep_unit(u)] for c, lst in oracle.items()}
    unfiltered = {c: [u for u in oracle[c] + other_only.get(c, []) if keep_unit(u)] for c in kept}

    new_labels = []
    for lab in labels:
        if lab["case_id"] not in kept:
            continue
        lab = dict(lab)
        unit = lab.get("chunk_id") or lab["document_id"]
        if (lab["case_id"], unit) in moved:
            target = moved[(lab["case_id"], unit)]
            lab["chunk_id"], lab["document_id"] = target, _doc_of(target)
        if lab["case_id"] in lowered:
            lab["grade"] = 0
        new_labels.append(lab)

    _write_dataset(
        out / "dataset",
        source,
        [cases[c] for c in sorted(kept)],
        new_labels,
        [d for d in documents if d["document_id"] not in corpus_dropped],
    )
    _write_run(out / "runs", "oracle", oracle, True)
    _write_run(out / "runs", "unfiltered", unfiltered, False)
    (out / "planted.json").write_text(json.dumps(planted, indent=1, sort_keys=True), encoding="utf-8")
    return planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--per-kind", type=int, default=8)
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1] / "sample_runs" / "dataset")
    args = parser.parse_args()
    planted = build(args.out, args.source, seed=args.seed, per_kind=args.per_kind)
    counts: dict[str, int] = defaultdict(int)
    for p in planted.values():
        counts[p["kind"]] += 1
    json.dump(dict(sorted(counts.items())), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
