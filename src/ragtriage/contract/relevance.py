"""What "relevant", "judged" and "labelled" mean, written once: a label's effective grade is at least the dataset's
relevance threshold; a label is judged when its grade is zero or more (trec_eval's word: a negative grade is "in the
pool, unjudged"); a unit is labelled when the case has any label of it, whatever its grade (ir_measures' Judged@k
counts these: the measure keeps ir_measures' name, its figure is the labelled share).

``qrels`` holds one effective grade per case and unit (see ``store/schema.py``); every layer that needs the
relevant labels (metrics, trec-compat, slices, checks, the classifier, the gate, dataset checks) builds its SQL
from these helpers, so a change of the rule, or of its default, is one edit. Plain strings, no DuckDB import:
the contract layer stays importable by everything.
"""

from __future__ import annotations

#: The threshold a dataset.json without ``relevance_threshold`` gets (grades 0..3: 2 = "relevant").
DEFAULT_RELEVANCE_THRESHOLD = 2

#: Annotators named ``judge:<model>`` are LLM judges (``ragtriage judge``): their labels are kept in the dataset
#: version for audit and agreement, but the store's ``qrels`` are the humans' alone; a judged label counts only
#: when a command is asked ``--labels with-judge``, and then only on a unit no human labelled.
JUDGE_PREFIX = "judge:"


def is_human(annotator: str = "annotator") -> str:
    """A SQL boolean: the label of ``annotator`` (a column expression) is a person's, not an LLM judge's."""
    return f"(NOT starts_with({annotator}, '{JUDGE_PREFIX}'))"


#: The current dataset version's threshold, as a scalar subquery.
CURRENT_THRESHOLD = "(SELECT relevance_threshold FROM current_dataset)"

#: The rule itself, a SQL template read at every call (tests/unit/test_one_rule.py changes it here alone).
RELEVANT = "({grade} >= {threshold})"


def is_relevant(grade: str = "grade", threshold: int | str = CURRENT_THRESHOLD) -> str:
    """A SQL boolean: ``grade`` (a column expression) counts as relevant at ``threshold`` (an int or SQL)."""
    return RELEVANT.format(grade=grade, threshold=threshold)


#: Judged: a label with a grade of zero or more; a negative grade is "in the pool but unjudged" (trec_eval's -2).
JUDGED = "({grade} >= 0)"


def is_judged(grade: str = "grade") -> str:
    """A SQL boolean: ``grade`` (a column expression of a label's grade) counts as judged."""
    return JUDGED.format(grade=grade)


def judged_units(qrels: str = "qrels") -> str:
    """A SQL query of the judged (case_id, unit_id) pairs of ``qrels``: what the classifier's ``n_judged`` and
    its unjudged-top rule count (the evidence's ``judged`` names this rule, :data:`JUDGED_TEXT`)."""
    return f"SELECT case_id, unit_id FROM {qrels} WHERE {is_judged()}"


#: The judged rule as the classifier's evidence states it.
JUDGED_TEXT = JUDGED.format(grade="grade")[1:-1]


def labelled_units(qrels: str = "qrels") -> str:
    """A SQL query of the labelled (case_id, unit_id) pairs of ``qrels``, negative grades included: the rows whose
    positions every measure reads (Judged@k counts them, Bpref skips the negative ones)."""
    return f"SELECT case_id, unit_id FROM {qrels}"


def relevance_statement(threshold: int | str, source: str) -> str:
    """The relevance rule at ``threshold`` as every header states it (``grade >= 2 (dataset.json)``), ``source``
    saying where the threshold came from."""
    return f"{is_relevant('grade', threshold)[1:-1]} ({source})"


def is_judged_nonrelevant(grade: str = "grade", threshold: int | str = CURRENT_THRESHOLD) -> str:
    """A SQL boolean: ``grade`` is judged but not relevant at ``threshold`` (what Bpref and infAP count)."""
    return f"({is_judged(grade)} AND NOT {is_relevant(grade, threshold)})"


def relevant_labels(threshold: int | str = CURRENT_THRESHOLD, qrels: str = "qrels") -> str:
    """A SQL query of the relevant labels: (case_id, unit_id, grade) rows of ``qrels`` (the store's, or another
    relation of its columns such as the judge-filled one) at ``threshold``."""
    return f"SELECT case_id, unit_id, grade FROM {qrels} WHERE {is_relevant('grade', threshold)}"


#: Dataset unit ``span``: a label is an evidence span (document, start, end: code points, end exclusive) and a
#: result's grade is derived from the spans it overlaps (docs/spans.md). The least overlap a result needs, in
#: characters, unless a command is asked ``--min-overlap``.
DEFAULT_MIN_OVERLAP = 1

#: A span unit id's pattern (the document id may itself hold ``:``).
SPAN_ID = "'^(.*):([0-9]+)-([0-9]+)$'"


def span_unit(doc: str = "document_id", start: str = "span_start", end: str = "span_end") -> str:
    """SQL of a span's unit id, ``document:start-end`` (labels and results alike; :func:`span_parts` reads it
    back): two results or labels of one span are one unit, and a unit id alone says where its text is."""
    return f"({doc} || ':' || CAST({start} AS VARCHAR) || '-' || CAST({end} AS VARCHAR))"


def span_parts(unit: str = "unit_id") -> tuple[str, str, str]:
    """SQL of (document_id, start, end) of a span unit id (the document id may itself hold ``:``); NULL offsets for
    a unit id of another form."""
    doc = f"regexp_extract({unit}, {SPAN_ID}, 1)"
    start, end = (f"TRY_CAST(regexp_extract({unit}, {SPAN_ID}, {i}) AS BIGINT)" for i in (2, 3))
    return doc, start, end


def spans_of(rows: str) -> str:
    """``rows`` (a relation with ``unit_id`` of span units) with its document ``d``, start ``s`` and end ``e``."""
    d, s, e = span_parts()
    return f"(SELECT x.*, {d} AS d, {s} AS s, {e} AS e FROM {rows} x)"


def overlap(a: str, b: str) -> str:
    """SQL of the characters two spans (aliases with ``s``, ``e``) share; end exclusive, so touching spans share 0
    and a negative value means a gap."""
    return f"(least({a}.e, {b}.e) - greatest({a}.s, {b}.s))"


def derived_grades(units: str, evidence: str, min_overlap: int = DEFAULT_MIN_OVERLAP) -> str:
    """The one rule of a retrieved span's grade: (case_id, unit_id, grade) of each unit of ``units`` (case_id,
    unit_id) in a document the case has evidence in (``evidence``: qrels rows of span units): the largest grade of
    the evidence spans it overlaps by at least ``min_overlap`` characters, else 0 (its document's evidence is
    marked and this span holds none of it: judged non-relevant). A unit of a document without evidence for the
    case stays unlabelled, as an unlabelled unit of any dataset."""
    return f"""SELECT u.case_id, u.unit_id,
                   coalesce(max(v.grade) FILTER (WHERE {overlap("u", "v")} >= {int(min_overlap)}), 0) AS grade
            FROM {spans_of(f"(SELECT DISTINCT case_id, unit_id FROM {units})")} u
            JOIN {spans_of(evidence)} v ON u.case_id = v.case_id AND u.d = v.d
            GROUP BY u.case_id, u.unit_id"""
