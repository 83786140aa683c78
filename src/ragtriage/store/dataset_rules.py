"""Rules a dataset must satisfy before it is written: the labels' scale and references, the cases' behaviours."""

from __future__ import annotations

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.fields import CASES, DOCUMENTS
from ragtriage.contract.manifest import DatasetManifest
from ragtriage.contract.rules import Rule, apply_rules, duplicate_rule, enum_rules, unknown_ref_rule
from ragtriage.contract.staging import Staged


def dataset_findings(con: duckdb.DuckDBPyConnection, staged: dict[str, Staged], m: DatasetManifest) -> list[Finding]:
    cases, labels = staged["cases"], staged["labels"]
    out = apply_rules(
        con,
        cases,
        [
            *enum_rules(CASES),
            duplicate_rule(["id"], "id", "case id"),
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
        unknown_ref_rule("case_id", cases.name, "id", "case id"),
        Rule(
            "grade",
            "grade-out-of-scale",
            f"s.grade IS NOT NULL AND (s.grade < {m.grade_min} OR s.grade > {m.grade_max})",
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
            *enum_rules(DOCUMENTS),
            duplicate_rule(["chunk_id"], "chunk_id", "chunk id"),
            Rule(
                "effective_to",
                "bad-value",
                "s.effective_from IS NOT NULL AND s.effective_to IS NOT NULL AND s.effective_to < s.effective_from",
                "'effective_to ' || s.effective_to || ' is before effective_from ' || s.effective_from",
            ),
            Rule(
                "acl",
                "no-acl",
                "s.acl IS NULL OR len(s.acl) = 0",
                "'unit ' || coalesce(s.chunk_id, s.document_id) || ' has no acl'",
                "error" if m.acl_required else "warning",
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
