"""Turn case specs into contract rows: cases.jsonl and labels.jsonl, including the dataset's own defects.

Labels come from the specs' chunk keys (3 answers, 2 helps, 1 on topic, 0 looks relevant) plus one rule: the
heading chunk of an answering section is on topic (1). A seeded second annotator re-judges ~25 % of the
answerable cases with realistic disagreement, and a few deliberate dataset defects are planted where a real
test set has them: labels on units that are no longer in the snapshot, answerable cases nobody labelled.
"""

from __future__ import annotations

import random

from sample_case_specs import SPECS, Spec
from sample_corpus_base import TENANT_A, TENANT_B, Corpus

PRINCIPALS: dict[str, dict[str, object]] = {
    "staff": {"id": "u-emma.lind", "groups": ["all-staff"], "tenant": TENANT_A},
    "support": {"id": "u-raj.patel", "groups": ["all-staff", "support"], "tenant": TENANT_A},
    "eng": {"id": "u-lena.vogt", "groups": ["all-staff", "eng"], "tenant": TENANT_A},
    "hr": {"id": "u-maria.santos", "groups": ["all-staff", "hr-confidential"], "tenant": TENANT_A},
    "finance": {"id": "u-tom.berg", "groups": ["all-staff", "finance"], "tenant": TENANT_A},
    "kestrel": {"id": "u-dana.reyes", "groups": ["kestrel-staff"], "tenant": TENANT_B},
    "contractor": {"id": "u-ext.chen", "groups": ["contractors"], "tenant": TENANT_A},
}
HOLDOUT_FAMILIES = frozenset(
    {"remote", "procurement", "incident", "relay-api", "kestrel", "tickets", "hr-faq", "benefits", "bg200-de"}
)
PRIMARY, SECOND = "a.keller", "j.moreau"
# Dataset defects, by query: the label was made on an older chunking of the document ...
STALE_LABEL_QUERIES = (
    "What does a solid red LINK LED mean?",
    "When do personal API tokens expire?",
    "What is the 401(k) match?",
)
# ... or the annotator skipped the case (no relevant label at all, or only the heading).
UNLABELLED_QUERIES = ("How often are laptops replaced?", "Is there a bike leasing benefit?")


def case_id(n: int) -> str:
    return f"q{n:03d}"


def case_rows(specs: tuple[Spec, ...] = SPECS) -> list[dict[str, object]]:
    rows = []
    for n, s in enumerate(specs, 1):
        tags = list(s.tags)
        if s.negative and "negative" not in tags:
            tags.append("negative")
        if s.qtype not in tags:
            tags.append(s.qtype)
        rows.append(
            {
                "id": case_id(n),
                "query": s.query,
                "answerable": s.negative is None,
                "expected_behavior": s.negative or "evidence",
                "principal": PRINCIPALS[s.who] if s.who else None,
                "filters": dict(s.filters) or None,
                "split": "holdout" if s.family in HOLDOUT_FAMILIES else "dev",
                "source_family": s.family,
                "query_type": s.qtype,
                "language": s.language,
                "tags": tags,
                "critical": s.critical,
                "expected_scope": s.scope,
            }
        )
    return rows


def _note(corpus: Corpus, s: Spec, key: str, grade: int) -> str | None:
    chunk = corpus.chunk(key)
    doc = corpus.doc_of[chunk.document_id]
    who = PRINCIPALS.get(s.who or "", {})
    if who and doc.tenant != who["tenant"]:
        return "other tenant's document: looks relevant, not in scope"
    if who and grade < 2 and not set(doc.acl) & set(who["groups"]):  # type: ignore[call-overload]
        return f"restricted to {', '.join(doc.acl)}: looks relevant, not visible to this principal"
    if doc.status == "archived" and grade < 2:
        return "superseded version"
    if grade == 0:
        return "same vocabulary, does not answer"
    return None


def primary_labels(corpus: Corpus, specs: tuple[Spec, ...] = SPECS) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    stale_left = set(STALE_LABEL_QUERIES)
    for n, s in enumerate(specs, 1):
        graded: dict[str, tuple[int, str]] = {}
        for grade, keys in ((3, s.g3), (2, s.g2), (1, s.g1), (0, s.g0)):
            for key in keys:
                graded.setdefault(corpus.chunk(key).chunk_id, (grade, key))
        for _chunk_id, (grade, key) in list(graded.items()):
            head = corpus.heading_of(corpus.chunk(key)) if grade >= 2 else None
            if head is not None and head.chunk_id not in graded:
                graded[head.chunk_id] = (1, head.key or key)
        if s.query == UNLABELLED_QUERIES[0]:
            graded = {}
        elif s.query == UNLABELLED_QUERIES[1]:
            graded = {c: g for c, g in graded.items() if g[0] < 2}
        for chunk_id, (grade, key) in graded.items():
            chunk = corpus.by_key.get(key)
            note = _note(corpus, s, key, grade) if chunk is not None and chunk.chunk_id == chunk_id else None
            out.append(
                {
                    "case_id": case_id(n),
                    "document_id": chunk_id.split("#")[0],
                    "chunk_id": chunk_id,
                    "grade": grade,
                    "annotator": PRIMARY,
                    "note": note,
                }
            )
        if s.query in stale_left:
            stale_left.discard(s.query)
            doc = corpus.doc_of[corpus.chunk(s.g3[0]).document_id]
            ghost = f"{doc.document_id}#{len(doc.chunks) + 3:02d}"
            out.append(
                {
                    "case_id": case_id(n),
                    "document_id": doc.document_id,
                    "chunk_id": ghost,
                    "grade": 3,
                    "annotator": PRIMARY,
                    "note": f"labelled on manual version {doc.version} before re-chunking",
                }
            )
    return out


def second_labels(
    primary: list[dict[str, object]],
    cases: list[dict[str, object]],
    known: set[str],
    seed: int,
    share: float = 0.25,
    strong: int = 3,
) -> list[dict[str, object]]:
    """A second annotator on ``share`` of the answerable cases: mostly agreeing, some ±1, ``strong`` by 2.

    The second pass was done later in the current snapshot, so it only re-judges units in ``known``.
    """
    rng = random.Random(seed + 1)
    answerable = [str(c["id"]) for c in cases if c["answerable"]]
    chosen = sorted(rng.sample(answerable, round(len(answerable) * share)))
    by_case: dict[str, list[dict[str, object]]] = {}
    for row in primary:
        by_case.setdefault(str(row["case_id"]), []).append(row)
    out: list[dict[str, object]] = []
    strong_left = strong
    for cid in chosen:
        for row in by_case.get(cid, []):
            if row["chunk_id"] not in known:
                continue
            grade = int(row["grade"])  # type: ignore[call-overload]
            roll = rng.random()
            if grade == 3 and strong_left and roll < 0.35:
                new, note = 1, "second pass: on topic, but does not settle the question"
                strong_left -= 1
            elif roll < 0.2:
                new, note = min(3, max(0, grade + rng.choice((-1, 1)))), None
            else:
                new, note = grade, None
            out.append({**row, "grade": new, "annotator": SECOND, "note": note})
    return out


def label_rows(corpus: Corpus, cases: list[dict[str, object]], seed: int) -> list[dict[str, object]]:
    primary = primary_labels(corpus)
    known = {c.chunk_id for c in corpus.chunks()}
    return primary + second_labels(primary, cases, known, seed)
