"""What "relevant" and "judged" mean, written once: a label's effective grade is at least the dataset's relevance
threshold; a label is judged when its grade is zero or more.

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


def is_judged_nonrelevant(grade: str = "grade", threshold: int | str = CURRENT_THRESHOLD) -> str:
    """A SQL boolean: ``grade`` is judged but not relevant at ``threshold`` (what Bpref and infAP count)."""
    return f"({is_judged(grade)} AND NOT {is_relevant(grade, threshold)})"


def relevant_labels(threshold: int | str = CURRENT_THRESHOLD, qrels: str = "qrels") -> str:
    """A SQL query of the relevant labels: (case_id, unit_id, grade) rows of ``qrels`` (the store's, or another
    relation of its columns such as the judge-filled one) at ``threshold``."""
    return f"SELECT case_id, unit_id, grade FROM {qrels} WHERE {is_relevant('grade', threshold)}"
