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
