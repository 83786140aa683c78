"""Rules a dataset must satisfy before it is written: the labels' scale and references, the cases' behaviours."""

from __future__ import annotations

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.field_rules import field_rules
from ragtriage.contract.fields import CASES, DOCUMENTS, INT_MAX, INT_MIN, LABELS
from ragtriage.contract.manifest import DatasetManifest
from ragtriage.contract.rules import Rule, apply_rules, duplicate_rule, unknown_ref_rule
from ragtriage.contract.staging import Staged

_P = "CAST(s.principal AS JSON)"
_F = "CAST(s.filters AS JSON)"
_SCALAR_ID = "('VARCHAR', 'BIGINT', 'UBIGINT')"


def judgement_rule() -> Rule:
    """One judgement per case, unit and annotator, in every format (TREC, BEIR and JSON qrels are annotator
    ``default``): a second one is refused naming both lines, never averaged or silently kept (trec_eval refuses
    them too). Several annotators of one unit are the contract's way to record disagreement."""
    unit = "coalesce(s.chunk_id, s.section_id, s.document_id)"
    return duplicate_rule(
        ["case_id", "unit", "annotator"],
        "document_id",
        "judgement (case / unit / annotator)",
        key_exprs=["s.case_id", unit, "coalesce(s.annotator, 'default')"],
        name_first=True,
    )


def principal_rules() -> list[Rule]:
    """A principal's parts are read into typed columns; a wrongly typed part would become NULL (``groups:
    "staff"`` read as no groups) and silently change what the leakage check sees, so it is refused instead."""
    rules = []
    for part in ("id", "tenant"):
        t = f"json_type({_P}, '$.{part}')"
        rules.append(
            Rule(
                "principal",
                "wrong-type",
                f"s.principal IS NOT NULL AND {t} IS NOT NULL AND {t} <> 'NULL' AND {t} NOT IN {_SCALAR_ID}",
                f"'principal.{part}: wrong type: expected a string'",
            )
        )
    groups = f"json_type({_P}, '$.groups')"
    rules.append(
        Rule(
            "principal",
            "wrong-type",
            f"s.principal IS NOT NULL AND {groups} IS NOT NULL AND {groups} <> 'NULL' AND ({groups} <> 'ARRAY' OR "
            f"len(list_filter(json_type({_P}, '$.groups[*]'), lambda t: t <> 'VARCHAR')) > 0)",
            "'principal.groups: wrong type: expected a list of strings'",
        )
    )
    return rules


def filter_rules() -> list[Rule]:
    """``filters.effective_on`` must be a date (an invalid one would drop the case's date filter from the scope
    and staleness checks); the other filters are compared as strings, so they must be scalars."""
    eff = f"json_type({_F}, '$.effective_on')"
    rules = [
        Rule(
            "filters",
            "wrong-type",
            f"s.filters IS NOT NULL AND {eff} IS NOT NULL AND {eff} <> 'NULL' AND "
            f"({eff} <> 'VARCHAR' OR TRY_CAST({_F}->>'effective_on' AS DATE) IS NULL)",
            f"'filters.effective_on: ' || CAST({_F}->'effective_on' AS VARCHAR) || ' is not a date (YYYY-MM-DD)'",
        )
    ]
    for key in ("tenant", "language", "region", "product", "doc_type"):
        t = f"json_type({_F}, '$.{key}')"
        rules.append(
            Rule(
                "filters",
                "wrong-type",
                # a string, or a list of strings meaning "any of these" (checks/scope.py)
                f"s.filters IS NOT NULL AND ({t} = 'OBJECT' OR ({t} = 'ARRAY' AND "
                f"list_bool_or(list_transform(json_extract({_F}, '$.{key}[*]'), "
                f"lambda v: json_type(v) <> 'VARCHAR'))))",
                f"'filters.{key}: wrong type: expected a string or a list of strings'",
            )
        )
    return rules


def dataset_findings(
    con: duckdb.DuckDBPyConnection, staged: dict[str, Staged], m: DatasetManifest, *, strict: bool = True
) -> list[Finding]:
    """Every rule over the staged dataset; ``strict`` makes control characters in ids errors."""
    cases, labels = staged["cases"], staged["labels"]
    out = apply_rules(
        con,
        cases,
        [
            *field_rules(CASES, strict=strict),
            *principal_rules(),
            *filter_rules(),
            duplicate_rule(["id"], "id", "case id"),
            Rule("query", "empty-query", "trim(s.query, ' ' || chr(9) || chr(13)) = ''", "'query is empty'"),
            Rule(
                "expected_behavior",
                "missing-field",
                "s.answerable = FALSE AND s.expected_behavior IS NULL",
                "'expected_behavior is required when answerable is false "
                "(empty|below_threshold|insufficient_evidence)'",
            ),
            Rule(
                "expected_behavior",
                "bad-value",
                "s.answerable = FALSE AND s.expected_behavior = 'evidence'",
                "'an unanswerable case cannot expect evidence'",
            ),
        ],
    )
    label_rules = [
        *field_rules(LABELS, strict=strict),
        judgement_rule(),
        unknown_ref_rule("case_id", cases.name, "id", "case id"),
        Rule(
            "grade",
            "grade-out-of-scale",
            # a grade beyond INTEGER is reported once, by the range rule
            f"s.grade BETWEEN {INT_MIN} AND {INT_MAX} AND (s.grade < {m.grade_min} OR s.grade > {m.grade_max})",
            f"'grade ' || s.grade || ' is outside the scale {m.grade_min}..{m.grade_max}'",
        ),
    ]
    if m.unit == "chunk":
        label_rules.append(
            Rule(
                "chunk_id",
                "missing-field",
                "s.chunk_id IS NULL AND s.section_id IS NULL",
                "'the dataset unit is chunk: a label needs chunk_id or section_id'",
            )
        )
    docs = staged.get("documents")
    if docs is not None and docs.rows:
        unit_col = "document_id" if m.unit == "document" else "coalesce(chunk_id, section_id, document_id)"
        label_unit = "s.document_id" if m.unit == "document" else "coalesce(s.chunk_id, s.section_id)"
        label_rules.append(
            Rule(
                "chunk_id" if m.unit == "chunk" else "document_id",
                "label-unit-not-in-snapshot",
                f"{label_unit} IS NOT NULL AND {label_unit} NOT IN (SELECT {unit_col} FROM {docs.name})",
                f"'label on unit ' || {label_unit} || ' which is not in the corpus snapshot (dataset signal)'",
                "warning",
            )
        )
    out += apply_rules(con, labels, label_rules)
    if docs is not None:
        doc_rules = [
            *field_rules(DOCUMENTS, strict=strict),
            duplicate_rule(["chunk_id"], "chunk_id", "chunk id"),
            # a row without a chunk id stands for its whole document (a BEIR corpus): one row per document
            duplicate_rule(
                ["document_id"],
                "document_id",
                "document id",
                key_exprs=["CASE WHEN s.chunk_id IS NULL AND s.section_id IS NULL THEN s.document_id END"],
                name_first=True,
            ),
            Rule(
                "effective_to",
                "bad-value",
                "s.effective_from IS NOT NULL AND s.effective_to IS NOT NULL AND s.effective_to < s.effective_from",
                "'effective_to ' || s.effective_to || ' is before effective_from ' || s.effective_from",
            ),
            Rule(
                "acl",
                "no-acl",
                "s.acl IS NULL",
                "'unit ' || coalesce(s.chunk_id, s.document_id) || ' has no acl'",
                "error" if m.acl_required else "warning",
            ),
            # an empty acl is an acl: it admits nobody (every principal that sees the unit leaks it)
            Rule(
                "acl",
                "empty-acl",
                "len(s.acl) = 0",
                "'unit ' || coalesce(s.chunk_id, s.document_id) || ' has an empty acl: visible to nobody'",
                "warning",
            ),
        ]
        if m.unit == "chunk":
            doc_rules.append(
                Rule(
                    "chunk_id",
                    "missing-field",
                    "s.chunk_id IS NULL AND s.section_id IS NULL",
                    "'the dataset unit is chunk: each manifest row needs chunk_id (or section_id)'",
                )
            )
        out += apply_rules(con, docs, doc_rules)
    return out
