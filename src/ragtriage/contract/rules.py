"""Semantic rules over staged tables: values on their scale, keys unique, references resolvable.

Each rule is one SQL predicate over a staging table, so checking 10M result rows is a handful of scans. Rules
that need another table (unknown case ids, units absent from the corpus) take that table's name.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from ragtriage.contract.errors import Finding
from ragtriage.contract.fields import Table
from ragtriage.contract.staging import Staged, qident, sql_str


@dataclass(frozen=True)
class Rule:
    field: str | None
    code: str
    where: str  # predicate over the staging table aliased `s`
    message: str  # SQL expression giving the message text
    severity: str = "error"


def enum_rules(table: Table) -> list[Rule]:
    rules = []
    for f in table.fields:
        if f.enum:
            allowed = ", ".join(sql_str(v) for v in f.enum)
            col = f"s.{qident(f.name)}"
            rules.append(
                Rule(
                    f.name,
                    "bad-value",
                    f"{col} IS NOT NULL AND {col} NOT IN ({allowed})",
                    f"'value ' || {col} || ' is not one of {'|'.join(f.enum)}'",
                )
            )
    return rules


def duplicate_rule(keys: list[str], field: str, what: str) -> Rule:
    cols = ", ".join(f"s.{qident(k)}" for k in keys)
    part = ", ".join(qident(k) for k in keys)
    return Rule(
        field,
        "duplicate",
        f"row_number() OVER (PARTITION BY {part} ORDER BY line) > 1 AND ({' AND '.join(f's.{qident(k)} IS NOT NULL' for k in keys)})",  # noqa: E501
        f"'duplicate {what} ' || concat_ws(' / ', {cols})",
    )


def unknown_ref_rule(field: str, ref_table: str, ref_col: str, what: str, severity: str = "error") -> Rule:
    return Rule(
        field,
        "unknown-" + what.replace(" ", "-"),
        f"s.{qident(field)} IS NOT NULL AND s.{qident(field)} NOT IN (SELECT {qident(ref_col)} FROM {ref_table})",
        f"'unknown {what} ' || s.{qident(field)}",
        severity,
    )


def apply_rules(con: duckdb.DuckDBPyConnection, staged: Staged, rules: list[Rule], limit: int = 50) -> list[Finding]:
    """Evaluate rules; window predicates need QUALIFY, so each rule runs as its own filtered query."""
    out: list[Finding] = []
    for r in rules:
        clause = "QUALIFY" if "OVER (" in r.where else "WHERE"
        rows = con.execute(
            f"SELECT line, {r.message} FROM {staged.name} s {clause} {r.where} ORDER BY line LIMIT {limit}"
        ).fetchall()
        total = len(rows)
        if total == limit:
            total = con.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {staged.name} s {clause} {r.where})"
            ).fetchone()[0]  # type: ignore[index]
        for i, (line, msg) in enumerate(rows):
            text = str(msg)
            if staged.line_label == "row":
                text += f" (row {line})"
            if r.severity == "warning" and i == limit - 1 and total > limit:
                text += f" (and {total - limit} more like it)"
            out.append(Finding(str(staged.path), int(line), r.field, r.code, text, r.severity))
    return out
