"""Which configuration variables differ between a run and the baseline, read from what run.json recorded.

A comparison answers "did this change help" only when one variable changed. The variables are the run.json
fields that describe the system (corpus, index, embedding, chunking, reranker, k, candidate depth), each filter
of ``filters_applied`` and each leaf of ``system`` (nested objects flattened with dots, e.g. ``system.bm25.k1``).
Free-text descriptions are not variables and are left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from ragtriage.gate import sources

# run.json field -> the variable name shown to users
FIELDS = {
    "corpus_version": "corpus",
    "index_version": "index",
    "embedding_model": "embedding",
    "chunking": "chunking",
    "reranker": "reranker",
    "k": "k",
    "candidate_k": "candidate depth",
}
NOT_VARIABLES = ("system.description",)
ATTRIBUTION_WARNING = "more than one variable changed: cannot attribute the change to one variable"


@dataclass(frozen=True)
class Change:
    variable: str
    baseline: str
    run: str


@dataclass(frozen=True)
class ConfigDiff:
    run_id: str
    baseline: str
    changes: tuple[Change, ...]

    @property
    def warning(self) -> str | None:
        """The attribution warning when more than one variable changed, else None."""
        return ATTRIBUTION_WARNING if len(self.changes) > 1 else None

    def summary(self) -> str:
        """One line for a table cell: ``embedding: None → lsa-...; filters.acl: true → false``."""
        if not self.changes:
            return "same configuration" if self.run_id != self.baseline else "baseline"
        return "; ".join(f"{c.variable}: {c.baseline} → {c.run}" for c in self.changes)


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, out)
    else:
        out[prefix] = value


def _shown(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, ensure_ascii=False).strip('"')


def run_variables(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """run_id -> {variable: value} for each run (one query over the small ``runs`` table)."""
    cols = ", ".join(FIELDS)
    table = sources.query(
        con,
        f"SELECT run_id, {cols}, CAST(filters_applied AS VARCHAR) AS filters, CAST(system AS VARCHAR) AS system "
        "FROM runs WHERE list_contains($ids, run_id)",
        {"ids": run_ids},
    )
    out: dict[str, dict[str, Any]] = {}
    for row in table.to_pylist():
        flat = {FIELDS[f]: row[f] for f in FIELDS}
        for name in ("filters", "system"):
            parsed = json.loads(row[name]) if row[name] else None
            if isinstance(parsed, dict):
                _flatten(name, parsed, flat)
            elif parsed is not None:
                flat[name] = parsed
        out[str(row["run_id"])] = {k: v for k, v in flat.items() if k not in NOT_VARIABLES}
    return out


def diff(variables: dict[str, dict[str, Any]], run_id: str, baseline: str) -> ConfigDiff:
    """The variables whose values differ between ``run_id`` and ``baseline`` (a variable one of them lacks counts
    as unset there)."""
    run, base = variables[run_id], variables[baseline]
    changes = [
        Change(name, _shown(base.get(name)), _shown(run.get(name)))
        for name in sorted(set(run) | set(base), key=_order)
        if run.get(name) != base.get(name)
    ]
    return ConfigDiff(run_id, baseline, tuple(changes))


def _order(name: str) -> tuple[int, str]:
    named = list(FIELDS.values())
    if name in named:
        return (named.index(name), "")
    return (len(named) + (0 if name.startswith("filters") else 1), name)


def config_diffs(con: duckdb.DuckDBPyConnection, run_ids: list[str], baseline: str) -> list[ConfigDiff]:
    """One ConfigDiff per run of ``run_ids`` (the baseline's own is empty)."""
    variables = run_variables(con, sorted({*run_ids, baseline}))
    return [diff(variables, r, baseline) for r in run_ids]
