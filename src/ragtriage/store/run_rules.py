"""Rules a run must satisfy: ranks and scores well-formed, every case known, units traceable to the corpus."""

from __future__ import annotations

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.field_rules import control_rule, empty_id_rule, field_rules, range_rules
from ragtriage.contract.fields import EVENTS, RESULTS
from ragtriage.contract.relevance import span_unit
from ragtriage.contract.rules import (
    Rule,
    apply_rules,
    duplicate_rule,
    enum_rules,
    hashed_suspects,
    small_int_suspects,
    unknown_ref_rule,
)
from ragtriage.contract.staging import Staged
from ragtriage.store.corpus_manifest import manifest_kind


def run_findings(
    con: duckdb.DuckDBPyConnection,
    staged: dict[str, Staged],
    unit: str,
    *,
    check_refs: bool = True,
    check_enums: bool = True,
    reader_checked: bool = False,
    strict: bool = True,
    stored: bool = False,
) -> list[Finding]:
    """``check_refs=False`` (validating a run without a store) skips the rules that need the dataset;
    ``check_enums=False`` those the loader has already checked before writing (:func:`pre_write_rules`);
    ``reader_checked`` (TREC, MS MARCO, JSON and DataFrame runs) skips the rank rules their computed ranks
    satisfy by construction and the score rule their reader has already applied (so a bad score is reported
    once); ``strict`` makes control characters in ids errors. ``stored``: the rows as the store keeps them, whose
    stage is the stored enum and never NULL, so a list is keyed on it as it is (not on a text copy of each)."""
    res = staged["results"]
    list_key = ["s.case_id", "s.stage" if stored else "coalesce(s.stage, 'final')"]
    rules = [
        *(pre_write_rules() if check_enums else []),
        empty_id_rule("document_id"),
        empty_id_rule("chunk_id"),
        *([] if reader_checked else [_rank_rule(), _score_rule()]),
    ]
    # Result rows of unknown cases are not an error: the loader leaves them out and warns once (as trec_eval).
    if not reader_checked:
        rules.append(_dup_rank_rule(list_key))
    if unit == "chunk":
        rules.append(
            Rule(
                "chunk_id",
                "missing-field",
                "s.chunk_id IS NULL",
                "'the dataset unit is chunk: each result needs chunk_id'",
            )
        )
    has_docs = check_refs and con.execute("SELECT count(*) > 0 FROM documents").fetchall()[0][0]
    # unit "auto" (validating a run without its dataset): a chunk id when given, else the document id.
    # A span dataset's results are in the corpus by their document; a repeat in a list is the same span.
    unit_expr = {"document": "s.document_id", "span": "s.document_id", "chunk": "s.chunk_id"}.get(
        unit, "coalesce(s.chunk_id, s.document_id)"
    )
    doc_unit = "document_id" if unit in ("document", "span") else "chunk_id"
    # Units the corpus knows had their ids checked when the dataset loaded: scan only the others (a regex over
    # every id of a large run is costly).
    unknown = (
        f"{unit_expr} NOT IN (SELECT {doc_unit} FROM documents WHERE {doc_unit} IS NOT NULL)" if has_docs else "TRUE"
    )
    rules += [control_rule(name, strict=strict, where=unknown) for name in ("document_id", "chunk_id")]
    # A manifest derived from traces lists only what was retrieved: a unit it lacks is unknown, not missing.
    if has_docs and manifest_kind(con) == "complete":
        rules.append(
            Rule(
                doc_unit,
                "result-unit-not-in-corpus",
                f"{unit_expr} IS NOT NULL AND {unit_expr} NOT IN (SELECT {doc_unit} FROM documents WHERE {doc_unit} IS NOT NULL)",  # noqa: E501
                f"'result unit ' || {unit_expr} || ' is not in the corpus manifest (ingestion signal)'",
                "warning",
            )
        )
    listed = span_unit("s.document_id", 's."start"', 's."end"') if unit == "span" else unit_expr
    dup = duplicate_rule([], doc_unit, "", key_exprs=[*list_key, listed], suspects=hashed_suspects([*list_key, listed]))
    rules.append(
        Rule(
            doc_unit,
            "duplicate-in-list",
            "",
            f"'{doc_unit} ' || k2 || ' appears more than once in this ranked list; the first counts'",
            "warning",
            group_by=dup.group_by,
            suspects=dup.suspects,
        )
    )
    out = apply_rules(con, res, rules)
    if "events" in staged:
        out += apply_rules(
            con,
            staged["events"],
            [
                *field_rules(EVENTS, strict=strict),
                *([unknown_ref_rule("case_id", "cases", "case_id", "case id")] if check_refs else []),
                duplicate_rule(["case_id"], "case_id", "event row for case"),
                Rule(
                    "latency_ms",
                    "bad-value",
                    "s.latency_ms IS NOT NULL AND (s.latency_ms < 0 OR isnan(s.latency_ms))",
                    "'latency_ms ' || CAST(s.latency_ms AS VARCHAR) || ' must be a non-negative number'",
                ),
            ],
        )
    return out


def pre_write_rules() -> list[Rule]:
    """The results rules that must hold before rows are written: a stage outside the enum cannot be stored,
    and a rank beyond the 32-bit range cannot be cast."""
    return [*enum_rules(RESULTS), *range_rules(RESULTS)]


def _score_rule() -> Rule:
    return Rule(
        "score",
        "bad-score",
        "s.score IS NOT NULL AND (isnan(s.score) OR isinf(s.score))",
        "'score ' || CAST(s.score AS VARCHAR) || ' is not a finite number'",
    )


def _rank_rule() -> Rule:
    return Rule("rank", "bad-rank", "s.rank IS NOT NULL AND s.rank < 1", "'rank ' || s.rank || ' is below 1'")


def _dup_rank_rule(list_key: list[str]) -> Rule:
    """``list_key`` groups on the defaulted stage, so a missing stage collides with 'final'."""
    return duplicate_rule(
        [],
        "rank",
        "(case_id, stage, rank)",
        key_exprs=[*list_key, "s.rank"],
        suspects=small_int_suspects(list_key, "s.rank"),
    )


def has_run_json(runs: str = "r") -> str:
    """SQL: whether the run of the ``runs`` row (an alias of ``runs``) came with a run.json, the only input that
    records its configuration, dataset version and corpus snapshot: a contract folder, or a TREC file beside one.
    A plain TREC, BEIR or JSON run has none, and what only run.json records is unknown for it, never "none"."""
    return (
        f"({runs}.source_format = 'folder' OR EXISTS (SELECT 1 FROM loads WHERE kind = 'run' "
        f"AND target = {runs}.run_id AND parse_filename(path) = 'run.json'))"
    )
