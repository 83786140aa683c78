"""Rules a dataset must satisfy before it is written: the labels' scale and references, the cases' behaviours."""

from __future__ import annotations

from dataclasses import replace

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.field_rules import field_rules
from ragtriage.contract.fields import CASES, DOCUMENTS, INT_MAX, INT_MIN, LABELS
from ragtriage.contract.manifest import DatasetManifest
from ragtriage.contract.relevance import SPAN_ID, span_parts, span_unit
from ragtriage.contract.rules import Rule, apply_rules, duplicate_rule, unknown_ref_rule
from ragtriage.contract.staging import Staged

_P = "CAST(s.principal AS JSON)"
_F = "CAST(s.filters AS JSON)"
_SCALAR_ID = "('VARCHAR', 'BIGINT', 'UBIGINT')"


def label_unit(unit: str, alias: str = "") -> str:
    """SQL of a label's unit id for the dataset's unit: its document, or its chunk (its section when it names no
    chunk). The one rule of the loader and of ``annotate.label_import``."""
    p = f"{alias}." if alias else ""
    if unit == "span":
        return span_unit(f"{p}document_id", f'{p}"start"', f'{p}"end"')
    return f"{p}document_id" if unit == "document" else f"coalesce({p}chunk_id, {p}section_id)"


def document_unit(unit: str) -> str:
    """SQL of a corpus manifest row's unit id for the dataset's unit (the store's and the Spark reader's)."""
    return "document_id" if unit in ("document", "span") else "coalesce(chunk_id, section_id, document_id)"


def grade_scale_rule(grade_min: int, grade_max: int, *, range_checked: bool = True) -> Rule:
    """A grade outside the dataset's scale is refused. ``range_checked``: a range rule already reports a grade
    beyond INTEGER once, so this one leaves it out."""
    guard = f"s.grade BETWEEN {INT_MIN} AND {INT_MAX} AND " if range_checked else ""
    return Rule(
        "grade",
        "grade-out-of-scale",
        f"{guard}(s.grade < {grade_min} OR s.grade > {grade_max})",
        f"'grade ' || s.grade || ' is outside the scale {grade_min}..{grade_max}'",
    )


def chunk_unit_rule(what: str = "a label needs chunk_id or section_id") -> Rule:
    """A dataset judged by chunk needs a chunk (or section) id on every label and manifest row."""
    return Rule(
        "chunk_id",
        "missing-field",
        "s.chunk_id IS NULL AND s.section_id IS NULL",
        f"'the dataset unit is chunk: {what}'",
    )


#: A document's length where the corpus manifest gives its whole text (a row without chunk or section id).
DOC_LENGTH = """(SELECT max(length(d.text)) FROM {docs} d WHERE d.document_id = s.document_id
                 AND d.chunk_id IS NULL AND d.section_id IS NULL)"""


def span_rules(what: str, docs: str | None) -> list[Rule]:
    """The offsets of a span (a label's evidence or a result's chunk; ``what`` says what each row needs): both
    given, start >= 0, end after start, and end within the document when ``docs`` (a manifest relation) holds
    its text. One set of rules for labels and results, so both refuse a span alike."""
    start, end = 's."start"', 's."end"'
    rules = [
        Rule("start", "missing-field", f"{start} IS NULL OR {end} IS NULL", f"'the dataset unit is span: {what}'"),
        Rule("start", "bad-value", f"{start} < 0", f"'start ' || {start} || ' is negative: offsets count from 0'"),
        Rule(
            "end",
            "bad-value",
            f"{start} >= 0 AND {end} <= {start}",
            f"'end ' || {end} || ' is not after start ' || {start} || ': a span is [start, end), end exclusive'",
        ),
    ]
    if docs is not None:
        length = DOC_LENGTH.format(docs=docs)
        rules.append(
            Rule(
                "end",
                "span-past-document",
                f"{end} > {length}",
                f"'end ' || {end} || ' is past the end of document ' || s.document_id || ' (' || {length} "
                "|| ' characters in the corpus manifest)'",
            )
        )
    return rules


def split_span_ids(con: duckdb.DuckDBPyConnection, staged: Staged) -> Staged:
    """The staged rows of a span dataset with the plain-text form read (TREC qrels and runs: a docno
    ``document:start-end``, ``contract.relevance.span_unit``'s form, is the document and its offsets); a docno
    without offsets keeps them NULL, and :func:`span_rules` then names the fields to add."""
    cols = {r[0] for r in con.execute(f"DESCRIBE {staged.name}").fetchall()}
    given = "" if "start" in cols else ', CAST(NULL AS BIGINT) AS "start", CAST(NULL AS BIGINT) AS "end"'
    d, st, e = span_parts("document_id")
    plain = f'"start" IS NULL AND "end" IS NULL AND regexp_matches(document_id, {SPAN_ID})'
    name = f"{staged.name}__spans"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
            SELECT * REPLACE (CASE WHEN {plain} THEN {d} ELSE document_id END AS document_id,
                              CASE WHEN {plain} THEN {st} ELSE "start" END AS "start",
                              CASE WHEN {plain} THEN {e} ELSE "end" END AS "end")
            FROM (SELECT *{given} FROM {staged.name})"""
    )
    return replace(staged, name=name)


def label_in_snapshot_rule(unit: str, units: str) -> Rule:
    """A label on a unit the corpus snapshot (``units``: SQL of its unit ids) does not hold is a dataset signal,
    a warning: the unit may have been removed from the corpus since it was judged."""
    u = "s.document_id" if unit == "span" else label_unit(unit, "s")
    return Rule(
        "chunk_id" if unit == "chunk" else "document_id",
        "label-unit-not-in-snapshot",
        f"{u} IS NOT NULL AND {u} NOT IN ({units})",
        f"'label on unit ' || {u} || ' which is not in the corpus snapshot (dataset signal)'",
        "warning",
    )


def judgement_rule(unit: str = "document") -> Rule:
    """One judgement per case, unit and annotator, in every format (TREC, BEIR and JSON qrels are annotator
    ``default``): a second one is refused naming both lines, never averaged or silently kept (trec_eval refuses
    them too). Several annotators of one unit are the contract's way to record disagreement."""
    key = label_unit(unit, "s") if unit == "span" else "coalesce(s.chunk_id, s.section_id, s.document_id)"
    return duplicate_rule(
        ["case_id", "unit", "annotator"],
        "document_id",
        "judgement (case / unit / annotator)",
        key_exprs=["s.case_id", key, "coalesce(s.annotator, 'default')"],
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
        judgement_rule(m.unit),
        unknown_ref_rule("case_id", cases.name, "id", "case id"),
        # a grade beyond INTEGER is reported once, by the range rule
        grade_scale_rule(m.grade_min, m.grade_max),
    ]
    docs = staged.get("documents")
    if m.unit == "chunk":
        label_rules.append(chunk_unit_rule())
    if m.unit == "span":
        label_rules += span_rules(
            "each label needs start and end, the evidence''s characters in its document "
            "(TREC qrels: a docno document:start-end)",
            docs.name if docs is not None and docs.rows else None,
        )
    if docs is not None and docs.rows:
        label_rules.append(label_in_snapshot_rule(m.unit, f"SELECT {document_unit(m.unit)} FROM {docs.name}"))
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
            doc_rules.append(chunk_unit_rule("each manifest row needs chunk_id (or section_id)"))
        out += apply_rules(con, docs, doc_rules)
    return out
