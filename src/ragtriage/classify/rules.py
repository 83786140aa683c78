"""The classifier's rules and pattern hints as data: one list feeds the SQL, the docs and the tests.

A rule is a named SQL predicate over one row of the per-failure facts (see ``facts.py``). Rules are tried in
``RULES`` order and the first that matches decides the failure's category; every matching rule is recorded in
the evidence, so a person sees all the explanations that applied, not only the winning one. Dataset rules come
first because a wrong label makes every other piece of evidence unreliable; ingestion next because a unit that
was never indexed cannot be ranked; ranking last. ``dataset.unjudged-top-k`` sits at the very end: it is the
weakest signal (sparse labels are normal), so it decides only when nothing else explains a failure, and
otherwise lowers the confidence of the deciding rule (``UNJUDGED_PENALTY``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtriage.contract.categories import CATEGORIES as DEFECT_CATEGORIES
from ragtriage.contract.categories import UNDETERMINED

FAILURES = (
    "no-relevant-in-top-k",
    "recall-below-bar",
    "false-abstention",
    "negative-not-abstained",
    "stale-first",
    "leakage",
)
# the defect categories shared with the notes (ragtriage.contract.categories), and the classifier's abstention
CATEGORIES = (*DEFECT_CATEGORIES, UNDETERMINED)
ANSWERABLE = ("no-relevant-in-top-k", "recall-below-bar", "false-abstention")
FALSE_ABSTENTION_RULE = "ranking.false-abstention"

UNJUDGED_RULE = "dataset.unjudged-top-k"
UNDETERMINED_RULE = "undetermined.not-retrieved-by-any-run"
# Said in the evidence of every failure whose missing unit no run returned while no manifest is loaded.
NOT_RETRIEVED = "not retrieved (corpus unknown: ingestion or ranking; load a corpus manifest to tell)"
HAS_QUERY_TEXT = "query IS DISTINCT FROM case_id"
"""SQL over ``cases``: the case has query text (a case loaded without topics shows its id as its query, and an id
is not text a pattern may read)."""
UNJUDGED_PENALTY = 0.75
DEFAULT_RECALL_BAR = 1.0
# "crowded by one document": at least this many of the top k, and at least half of k.
CROWD_MIN = 3
# near-duplicate chunks: token-set Jaccard at or above this, both with at least NEAR_DUP_MIN_TOKENS tokens.
NEAR_DUP_JACCARD = 0.8
NEAR_DUP_MIN_TOKENS = 8
# "several top results unjudged": every one of the first UNJUDGED_TOP final results (at least that many).
UNJUDGED_TOP = 3


# The inputs a rule can read. A rule names the ones it needs (``Rule.needs``) and its predicate is false when one
# is missing, so an absent input is never read as evidence (no manifest is not "no documents").
INPUTS: dict[str, str] = {
    "labels": "qrels of the current dataset version",
    "topics": "the cases' query text and fields (a topics file, or the contract's cases; not the qrels alone)",
    "this run": "the run's final list (and its candidate stage, when loaded)",
    "other runs": "the other loaded runs' lists, for this case and for any case",
    "manifest": "a corpus manifest (documents.jsonl): which units and documents exist",
    "principal": "the case's principal and the manifest's acl/tenant (the leakage check's rules)",
    "annotators": "several annotators' grades per label",
    "versions": "the manifest's status and effective dates",
    "calibration": "the run's calibrated score threshold (`ragtriage calibrate`)",
    "events": "the run's events (status, time-outs)",
    "snippets": "the text of the run's results (the contract's results.snippet; a TREC run has none)",
    "run.json": "the run's configuration (reranker, k, candidate_k, embedding_model, system, filters_applied)",
}


@dataclass(frozen=True)
class Advice:
    """One experiment for a rule, chosen when ``when`` (SQL over the run-configuration facts) holds; ``field`` is
    the run.json field it read, printed beside the text with its value."""

    when: str
    text: str
    field: str


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    applies_to: tuple[str, ...]
    confidence: float
    predicate: str  # SQL over a facts row
    description: str
    experiment: str  # when no ``advice`` applies
    needs: tuple[str, ...] = ("labels", "this run")
    advice: tuple[Advice, ...] = ()


@dataclass(frozen=True)
class Pattern:
    name: str
    applies_to: tuple[str, ...]
    predicate: str
    description: str
    experiment: str


def _missing(pred: str) -> str:
    return f"len(list_filter(missing, lambda u: coalesce({pred}, false))) > 0"


# A missing unit the labels themselves make unfindable: its chunk id left the snapshot, or the principal may not
# see it. Such a unit explains a failure only when every missing unit is one; otherwise a findable relevant unit
# was missed too, and that is the defect to fix first. Unknown (no manifest, no principal) is not a defect.
_LABEL_DEFECT = "coalesce((NOT u.in_corpus AND u.document_in_corpus) OR u.permitted = false, false)"
_ONLY_LABEL_DEFECTS = f"len(list_filter(missing, lambda u: NOT {_LABEL_DEFECT})) = 0"
# ``indexed`` is known only with a corpus manifest (NULL without): a unit no run returned is then not known to be
# indexed, and the evidence cannot tell ingestion from ranking.
MISSING_ANY_RUN = "u.location = 'absent-from-runs' AND NOT coalesce(u.indexed, false)"

# The category of one missing relevant unit's own defect, read from its location (the rules' evidence): what
# "fixing the defects of a category" moves, for the cost of each category (``cost.py``).
UNIT_CATEGORY = f"""CASE WHEN {_LABEL_DEFECT} THEN 'dataset'
     WHEN u.location = 'absent-from-corpus' AND u.document_in_corpus = false THEN 'ingestion'
     WHEN {MISSING_ANY_RUN} AND u.in_corpus THEN 'ingestion'
     WHEN {MISSING_ANY_RUN} AND u.in_corpus IS NULL THEN 'undetermined'
     ELSE 'ranking' END"""

# The run.json fields an advice reads, and how its value is printed (SQL over the run-configuration facts).
CONFIG_FIELDS: dict[str, str] = {
    "reranker": "coalesce(cfg_reranker, 'null')",
    "candidate_k": "coalesce(CAST(cfg_candidate_k AS VARCHAR), 'null') || ', k: ' || CAST(cfg_k AS VARCHAR)",
    "embedding_model, system": "cfg_retrieval || ' (' || cfg_retrieval_basis || ')'",
    "filters_applied.acl": "coalesce(CAST(cfg_filter_acl AS VARCHAR), 'not stated') || ', tenant: ' "
    "|| coalesce(CAST(cfg_filter_tenant AS VARCHAR), 'not stated')",
    "filters_applied.effective_on": "coalesce(CAST(cfg_filter_effective_on AS VARCHAR), 'not stated')",
}

_SHALLOW = "(cfg_candidate_k IS NULL OR cfg_candidate_k <= cfg_k)"

RULES: tuple[Rule, ...] = (
    Rule(
        FALSE_ABSTENTION_RULE,
        "ranking",
        ("false-abstention",),
        0.9,
        "abstention IS NOT NULL",
        "An answerable case with a relevant label on which the run abstained (an empty final list that is no "
        "outage, a top score below its calibrated threshold, or an insufficient-evidence event): the abstention "
        "decision, not the ranking, withheld evidence that exists.",
        "Re-calibrate the run's abstention threshold on the labelled cases: `ragtriage calibrate --run RUN` "
        "(see evidence.facts.abstention for the top score and the threshold).",
        needs=("labels", "this run", "events", "calibration"),
    ),
    Rule(
        "dataset.no-relevant-label",
        "dataset",
        ANSWERABLE,
        0.95,
        "n_relevant = 0",
        "An answerable case has no label at or above the relevance threshold: nothing can ever count as found.",
        "Label the case (or mark it unanswerable with an expected_behavior).",
        needs=("labels",),
    ),
    Rule(
        "dataset.label-not-in-snapshot",
        "dataset",
        ANSWERABLE,
        0.9,
        _missing("NOT u.in_corpus AND u.document_in_corpus") + " AND " + _ONLY_LABEL_DEFECTS,
        "A missing relevant label names a unit that is not in the corpus snapshot although its document is "
        "(the document was re-chunked after labelling): the label points at nothing retrievable. Decides only "
        "when every missing unit is such a label defect (this one or an unpermitted unit).",
        "Re-map the labels to the snapshot's current chunk ids (or re-label the case).",
        needs=("labels", "manifest"),
    ),
    Rule(
        "dataset.disputed-grade",
        "dataset",
        ANSWERABLE,
        0.8,
        "len(disputed) > 0",
        "Annotators disagree by two or more grades on a unit that decides the failure (a missing relevant "
        "unit, or a top-k unit the effective grade calls not relevant).",
        "Adjudicate the disputed label (annotator `adjudicated`).",
        needs=("labels", "annotators", "this run"),
    ),
    Rule(
        "dataset.unpermitted-evidence",
        "dataset",
        ANSWERABLE,
        0.85,
        _missing("u.permitted = false") + " AND " + _ONLY_LABEL_DEFECTS,
        "A missing relevant unit is one the case's principal may not see: a correct retriever must not return "
        "it, so the label (or the principal) is wrong. Decides only when every missing unit is a label defect.",
        "Re-label with evidence the principal may see, or fix the case's principal.",
        needs=("labels", "manifest", "principal"),
    ),
    Rule(
        "ingestion.absent-from-corpus",
        "ingestion",
        ANSWERABLE,
        0.85,
        _missing("u.location = 'absent-from-corpus' AND u.document_in_corpus = false"),
        "A missing relevant unit's document is absent from the loaded corpus manifest (and this run did not "
        "return it): the document was never ingested. Never without a manifest: no manifest is not no documents.",
        "Ingest the missing documents into the corpus snapshot and re-index.",
        needs=("labels", "this run", "manifest"),
    ),
    Rule(
        "ingestion.absent-from-runs",
        "ingestion",
        ANSWERABLE,
        0.8,
        _missing(f"{MISSING_ANY_RUN} AND u.in_corpus"),
        "A missing relevant, permitted unit is in the corpus manifest but no loaded run returned it, at any "
        "stage or depth, for any case: it is not in the index (crawler or parser dropped it).",
        "Check the index for the missing units (crawler and parser logs) and re-index them.",
        needs=("labels", "this run", "other runs", "manifest"),
    ),
    Rule(
        "ranking.one-document-crowds-top-k",
        "ranking",
        ANSWERABLE,
        0.7,
        "crowding_document IS NOT NULL",
        f"One document holds at least half of the top k (and at least {CROWD_MIN} results) while a missing "
        "relevant unit the principal may see belongs to another document.",
        "Cap results per document or diversify the list (MMR); consider splitting the large document.",
    ),
    Rule(
        "ranking.archived-outranks-current",
        "ranking",
        (*ANSWERABLE, "stale-first"),
        0.9,
        "stale_first",
        "In the final list a stale (archived, expired or not-yet-effective) version of a document ranks above "
        "its version in force.",
        "Filter archived versions out at query time (status or effective-date filter).",
        needs=("this run", "manifest", "versions"),
        advice=(
            Advice(
                "cfg_filter_effective_on IS true",
                "The effective-date filter is on, yet a stale version outranks the one in force: check the "
                "status and effective dates the index holds, and the date the run filters on.",
                "filters_applied.effective_on",
            ),
            Advice(
                "true",
                "Filter stale versions out at query time (status or effective-date filter).",
                "filters_applied.effective_on",
            ),
        ),
    ),
    Rule(
        "ranking.below-k",
        "ranking",
        ANSWERABLE,
        0.85,
        _missing("u.location = 'final-below-k'"),
        "A missing relevant unit the principal may see is in the final list, but below k.",
        "Tune the ranker so the unit reaches the top k; try a larger k.",
        advice=(
            Advice(
                "has_reranker",
                "Tune or re-weight the reranker so the unit reaches the top k; try a larger k.",
                "reranker",
            ),
            Advice(
                "NOT has_reranker",
                "No reranker: add one over the candidates, or tune the first-stage scoring so the unit reaches "
                "the top k; try a larger k.",
                "reranker",
            ),
        ),
    ),
    Rule(
        "ranking.candidate-not-promoted",
        "ranking",
        ANSWERABLE,
        0.85,
        _missing("u.location = 'candidate'"),
        "A missing relevant unit the principal may see is in the candidate stage but not in the final list.",
        "Check what drops it between the candidate and the final list.",
        needs=("labels", "this run", "run.json"),
        advice=(
            Advice(
                "has_reranker",
                "The reranker dropped it: retrain or re-weight the reranker; check its features for the unit.",
                "reranker",
            ),
            Advice(
                "NOT has_reranker",
                "No reranker is declared, yet the final list drops a candidate: check the step between the "
                "stages (fusion, filters, truncation to k).",
                "reranker",
            ),
        ),
    ),
    Rule(
        "ranking.found-by-other-run",
        "ranking",
        ANSWERABLE,
        0.75,
        _missing("u.location = 'other-run'"),
        "A missing relevant unit the principal may see was returned by another loaded run for this case (a "
        "leaking run's rows are never cited: an unpermitted unit is never found), but this run did not return "
        "it at any depth.",
        "Compare with the run that found it.",
        needs=("labels", "this run", "other runs", "run.json"),
        advice=(
            Advice(
                f"cfg_retrieval = 'hybrid' AND {_SHALLOW}",
                "Compare with the run that found it: widen the candidate depth before fusion and reranking.",
                "candidate_k",
            ),
            Advice(
                "cfg_retrieval = 'hybrid'",
                "Compare with the run that found it: re-weight the fusion of the retrievers.",
                "embedding_model, system",
            ),
            Advice(
                "true",
                "Compare with the run that found it: add its retriever to this one (hybrid) or widen the "
                "candidate depth.",
                "embedding_model, system",
            ),
        ),
    ),
    Rule(
        "ranking.never-retrieved",
        "ranking",
        ANSWERABLE,
        0.65,
        _missing("u.location = 'absent-from-runs' AND u.indexed"),
        "A missing relevant unit the principal may see is indexed (a run returned it for another case) but no "
        "run returns it for this query at any depth: the query and the text do not meet (vocabulary mismatch, "
        "another language).",
        "Add query expansion or synonyms, a multilingual embedding, or keyword retrieval; widen candidate depth.",
        needs=("labels", "this run", "other runs", "run.json"),
        advice=(
            Advice(
                "cfg_retrieval = 'lexical'",
                "Lexical retrieval only: add a (multilingual) embedding retriever or query expansion.",
                "embedding_model, system",
            ),
            Advice(
                "cfg_retrieval = 'dense'",
                "Dense retrieval only: add keyword (BM25) retrieval or query expansion with synonyms.",
                "embedding_model, system",
            ),
            Advice(
                "cfg_retrieval = 'hybrid'",
                "Both retrievers miss it: add query expansion or synonyms, or a multilingual embedding.",
                "embedding_model, system",
            ),
        ),
    ),
    Rule(
        UNDETERMINED_RULE,
        "undetermined",
        ANSWERABLE,
        0.4,
        _missing(f"{MISSING_ANY_RUN} AND u.in_corpus IS NULL"),
        NOT_RETRIEVED + ". With a manifest this is ingestion.absent-from-runs or ingestion.absent-from-corpus.",
        "Load the corpus manifest (documents.jsonl) with the dataset to tell ingestion from ranking.",
        needs=("labels", "this run", "other runs"),
    ),
    Rule(
        UNJUDGED_RULE,
        "dataset",
        ANSWERABLE,
        0.5,
        "unjudged_top",
        f"The first {UNJUDGED_TOP} final results are all unjudged: labels may be incomplete, and the run may "
        "have found evidence nobody judged.",
        "Judge the unjudged top results (pool the runs' top k for annotation).",
    ),
    Rule(
        "dataset.negative-has-relevant-labels",
        "dataset",
        ("negative-not-abstained",),
        0.9,
        "n_relevant > 0",
        "A case expected to abstain has labels at or above the relevance threshold: the case contradicts itself.",
        "Decide whether the case is answerable; fix answerable/expected_behavior or the labels.",
        needs=("labels",),
    ),
    Rule(
        "ranking.negative-confident-scores",
        "ranking",
        ("negative-not-abstained",),
        0.85,
        "threshold IS NOT NULL AND top_score >= threshold",
        "A negative case was answered with a top score at or above the run's calibrated threshold.",
        "Raise the abstention threshold.",
        needs=("this run", "calibration", "run.json"),
        advice=(
            Advice(
                "has_reranker",
                "Raise the abstention threshold, or gate the answer on the reranker's relevance score.",
                "reranker",
            ),
            Advice(
                "NOT has_reranker",
                "Raise the abstention threshold; no reranker is declared, so add a relevance check before answering.",
                "reranker",
            ),
        ),
    ),
    Rule(
        "ranking.negative-answered",
        "ranking",
        ("negative-not-abstained",),
        0.6,
        "n_results > 0",
        "A negative case got a non-empty final list (with no calibrated threshold to judge the scores by, or "
        "a behaviour other than below_threshold expected).",
        "Calibrate an abstention threshold (`ragtriage calibrate`) and abstain below it.",
        needs=("this run",),
    ),
    Rule(
        "ranking.negative-not-abstained",
        "ranking",
        ("negative-not-abstained",),
        0.4,
        "n_results = 0",
        "A negative case returned nothing, but not in the expected way (time-out, error, or no "
        "insufficient_evidence status).",
        "Make the system report insufficient_evidence explicitly instead of an empty or failed call.",
        needs=("this run", "events"),
    ),
    Rule(
        "security.leaked-result",
        "security",
        ("leakage",),
        1.0,
        "true",
        "The run showed the case's principal a unit it may not see (any stage): a hard failure.",
        "Apply the acl and tenant filters in every stage and re-run.",
        needs=("this run", "manifest", "principal", "run.json"),
        advice=(
            Advice(
                "cfg_filter_acl IS true AND cfg_filter_tenant IS NOT false",
                "The run says its acl filter is applied, yet a unit leaked: check the acl fields the index "
                "holds and that every stage (candidates too) filters.",
                "filters_applied.acl",
            ),
            Advice("true", "Apply the acl and tenant filters in every stage and re-run.", "filters_applied.acl"),
        ),
    ),
)

PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "heading-only",
        ANSWERABLE,
        "len(heading_hits) > 0",
        "A heading chunk ranks in the top k, but the relevant body chunk of its section does not.",
        "Attach heading context to body chunks (prepend the section heading) or merge headings into bodies.",
    ),
    Pattern(
        "exact-identifier",
        ANSWERABLE,
        "len(identifiers_missed) > 0",
        "The query holds an ID-like token (RN-2024-117, E4012) that no top-k result contains.",
        "Add keyword or hybrid retrieval, or boost exact identifier matches.",
    ),
    Pattern(
        "table-answer",
        ANSWERABLE,
        "len(table_units) > 0 OR query_type = 'table'",
        "The answer is in a table chunk (or the question asks for a table value) and it is missing.",
        "Serialise tables with their header row at ingestion and check the parser keeps table chunks.",
    ),
    Pattern(
        "current-archived-mixed",
        (*ANSWERABLE, "stale-first"),
        "len(version_mix) > 0",
        "The top k holds both a stale and an in-force version of one document.",
        "Filter archived versions out at query time (status or effective-date filter).",
    ),
    Pattern(
        "multi-part-partial",
        ANSWERABLE,
        "multi_part AND n_found >= 1 AND n_found < n_relevant",
        "A multi-part question (query_type multi-part, or tag multi-part) with only some of its relevant "
        "passages in the top k.",
        "Decompose the question into sub-queries and merge their results, or raise k.",
    ),
    Pattern(
        "one-document-dominates",
        ANSWERABLE,
        "crowding_document IS NOT NULL",
        f"One document holds at least half of the top k (and at least {CROWD_MIN} results) while a missing "
        "relevant unit belongs to another document.",
        "Cap results per document or diversify the list (MMR); consider splitting the large document.",
    ),
    Pattern(
        "near-duplicates",
        (*ANSWERABLE, "stale-first"),
        "len(duplicate_pairs) > 0",
        f"Two top-k chunks are near-duplicates (token Jaccard >= {NEAR_DUP_JACCARD}), wasting a slot.",
        "De-duplicate near-identical chunks at index time or diversify the final list.",
    ),
)

PATTERNS_BY_NAME = {p.name: p for p in PATTERNS}
