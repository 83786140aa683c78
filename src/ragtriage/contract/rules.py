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
    group_by: list[str] | None = None  # duplicate rule: keys seen more than once, reported at their last line


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


def duplicate_rule(keys: list[str], field: str, what: str, *, key_exprs: list[str] | None = None) -> Rule:
    """Duplicates found with one hash aggregate (a window over 10M rows costs seconds; GROUP BY does not)."""
    exprs = key_exprs or [qident(k) for k in keys]
    return Rule(
        field,
        "duplicate",
        "",
        f"'duplicate {what} ' || concat_ws(' / ', {', '.join(f'k{i}' for i in range(len(exprs)))})",
        group_by=exprs,
    )


def unknown_ref_rule(field: str, ref_table: str, ref_col: str, what: str, severity: str = "error") -> Rule:
    return Rule(
        field,
        "unknown-" + what.replace(" ", "-"),
        f"s.{qident(field)} IS NOT NULL AND s.{qident(field)} NOT IN (SELECT {qident(ref_col)} FROM {ref_table})",
        f"'unknown {what} ' || s.{qident(field)}",
        severity,
    )


def _rule_sql(table: str, r: Rule) -> str:
    if r.group_by:
        # The message is built from the group keys k0..kn after grouping, never per input row.
        keys = ", ".join(f"{k} AS k{i}" for i, k in enumerate(r.group_by))
        present = " AND ".join(f"({k}) IS NOT NULL" for k in r.group_by)
        return (
            f"SELECT line, {r.message} AS msg FROM (SELECT max(line) AS line, {keys} FROM {table} s "
            f"WHERE {present} GROUP BY ALL HAVING count(*) > 1)"
        )
    return f"SELECT line, {r.message} AS msg FROM {table} s WHERE {r.where}"


def apply_rules(con: duckdb.DuckDBPyConnection, staged: Staged, rules: list[Rule], limit: int = 50) -> list[Finding]:
    out: list[Finding] = []
    for r in rules:
        sql = _rule_sql(staged.name, r)
        rows = con.execute(f"SELECT * FROM ({sql}) ORDER BY line LIMIT {limit}").fetchall()
        total = len(rows)
        if total == limit:
            total = con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]  # type: ignore[index]
        for i, (line, msg) in enumerate(rows):
            text = str(msg)
            if staged.line_label == "row":
                text += f" (row {line})"
            if r.severity == "warning" and i == limit - 1 and total > limit:
                text += f" (and {total - limit} more like it)"
            out.append(Finding(str(staged.path), int(line), r.field, r.code, text, r.severity))
    return out
