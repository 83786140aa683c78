"""Turn failure facts into classifications: the first matching rule decides, every matching rule is recorded.

The SQL is generated from ``RULES`` and ``PATTERNS`` so the order written in rules.py (and docs/classifier.md)
is the order applied, and a rule's category, confidence and experiment live in one place.
"""

from __future__ import annotations

from collections.abc import Iterable

from ragtriage.classify.facts import EVIDENCE_FIELDS
from ragtriage.classify.rules import (
    ANSWERABLE,
    CONFIG_FIELDS,
    FAILURES,
    PATTERNS,
    RULES,
    UNJUDGED_PENALTY,
    UNJUDGED_RULE,
    Rule,
)
from ragtriage.contract.relevance import JUDGED_TEXT


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def in_failures(kinds: Iterable[str]) -> str:
    """SQL: the row's failure kind is one of ``kinds``."""
    return "failure IN (" + ", ".join(_quote(k) for k in kinds) + ")"


#: SQL list of the failure kinds in ``FAILURES`` order (rows are ordered by ``list_position`` in it).
FAILURE_ORDER = "[" + ", ".join(_quote(f) for f in FAILURES) + "]"


def _matching(items: Iterable[tuple[str, tuple[str, ...], str]]) -> str:
    """SQL list of the names whose failure kinds and predicate match, in the given order."""
    cases = ",\n        ".join(
        f"CASE WHEN {in_failures(kinds)} AND coalesce(({pred}), false) THEN {_quote(name)} END"
        for name, kinds, pred in items
    )
    return f"list_filter([\n        {cases}\n    ], lambda x: x IS NOT NULL)"


def _lookup(column: str, values: dict[str, str]) -> str:
    arms = " ".join(f"WHEN {_quote(k)} THEN {v}" for k, v in values.items())
    return f"CASE {column} {arms} END"


def experiment_sql(rule: Rule) -> str:
    """The rule's experiment for this run: the first advice whose condition holds on the run's configuration,
    naming the run.json field it read and its value; the rule's own experiment when no advice applies."""
    if not rule.advice:
        return _quote(rule.experiment)
    arms = " ".join(
        f"WHEN cfg_has_run_json AND coalesce(({a.when}), false) THEN "
        f"{_quote(a.text + ' (read run.json ' + a.field + ': ')} || {CONFIG_FIELDS[a.field]} || ')'"
        for a in rule.advice
    )
    unknown = _quote(rule.experiment + " (no run.json: the run's configuration is not known)")
    return f"CASE {arms} WHEN NOT cfg_has_run_json THEN {unknown} ELSE {_quote(rule.experiment)} END"


def _evidence() -> str:
    """A JSON object per row: k, the judged rule, the matched rules and patterns, and the facts of the row's
    failure kind."""
    arms = []
    for kind, fields in EVIDENCE_FIELDS.items():
        cond = in_failures(ANSWERABLE) if kind == "answerable" else f"failure = {_quote(kind)}"
        body = ", ".join(f"{f} := {f}" for f in fields)
        arms.append(f"WHEN {cond} THEN to_json(struct_pack({body}))")
    facts = "CASE " + " ".join(arms) + " END"
    judged = _quote(JUDGED_TEXT)  # which "judged" n_judged and the unjudged-top rule count
    pack = f"k := k, judged := {judged}, rules := rules, patterns := patterns, facts := {facts}"
    return f"CAST(to_json(struct_pack({pack})) AS VARCHAR)"


def decide_sql(facts: str) -> str:
    """The statement classifying the rows of relation ``facts`` (which carries ``k``, ``run_id`` and
    ``dataset_version`` besides the facts columns)."""
    rules = _matching((r.name, r.applies_to, r.predicate) for r in RULES)
    patterns = _matching((p.name, p.applies_to, p.predicate) for p in PATTERNS)
    category = _lookup("rules[1]", {r.name: _quote(r.category) for r in RULES})
    confidence = _lookup("rules[1]", {r.name: repr(r.confidence) for r in RULES})
    rule_exp = _lookup("rules[1]", {r.name: experiment_sql(r) for r in RULES})
    pattern_exp = _lookup("p", {p.name: _quote(p.experiment) for p in PATTERNS})
    return f"""
WITH matched AS (
    SELECT *, {rules} AS rules, {patterns} AS patterns FROM {facts}
), decided AS (
    SELECT *, rules[1] AS rule, {category} AS category,
           list_concat([{rule_exp}], list_transform(patterns, lambda p: {pattern_exp})) AS all_experiments
    FROM matched
)
SELECT run_id, case_id, failure, category, rule,
       CAST(round({confidence} * CASE WHEN category <> 'dataset' AND list_contains(rules, {_quote(UNJUDGED_RULE)})
                                 THEN {UNJUDGED_PENALTY} ELSE 1.0 END, 4) AS DOUBLE) AS confidence,
       {_evidence()} AS evidence,
       patterns,
       list_filter(all_experiments, lambda x, i: list_position(all_experiments, x) = i) AS experiments,
       dataset_version, CAST(k AS INTEGER) AS k
FROM decided
ORDER BY case_id, list_position({FAILURE_ORDER}, failure), k
"""
