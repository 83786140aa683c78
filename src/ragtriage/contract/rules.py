"""Semantic rules over staged tables: values on their scale, keys unique, references resolvable.

Each rule is one SQL predicate over a staging table. All row rules of a table are checked in one scan (only the
rows breaking some rule go on to build messages), and each duplicate rule is one aggregate, so checking a run's
result rows is a handful of scans. Rules that need another table (unknown case ids, units absent from the
corpus) take that table's name.

A duplicate rule grouped by one key per row (case, stage, rank) builds a hash table with a group per row, which is
costly on a large run. It may therefore name ``suspects``: a cheaper aggregate over a key prefix that returns every
prefix group that *can* hold a duplicate (and, ideally, few others), or a hash of the whole key whose repeats are
found by a sort (taken in the row rules' scan); the exact grouping then runs over those groups or rows only. A
suspects query may over-report, never under-report, so the result stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.errors import Finding
from ragtriage.contract.fields import Table
from ragtriage.contract.staging import Staged, qident, sql_str

_BATCH_ROWS = 1 << 20  # rows per batch when hashes are streamed into numpy: small beside the whole array


@dataclass(frozen=True)
class Rule:
    field: str | None
    code: str
    where: str  # predicate over the staging table aliased `s`
    message: str  # SQL expression giving the message text
    severity: str = "error"
    group_by: list[str] | None = None  # duplicate rule: keys seen more than once, reported at their last line
    suspects: Suspects | None = None


@dataclass(frozen=True)
class Suspects:
    """How a duplicate rule narrows its exact grouping. ``sql`` runs over ``{table} s``.

    With ``n > 0`` it gives columns p0..p{n-1}: the first n group keys of every group that may hold a duplicate.
    With ``n == 0`` it gives one UBIGINT ``h`` per row, a hash of the whole key; the suspects are the rows whose
    hash occurs more than once, found by sorting the hashes in numpy (cheaper than sorting each group's hashes in
    SQL or grouping by the key itself). ``key`` and ``present`` are that hash and the rows it is taken over, so
    the row rules of the same table can be checked in the same scan (:func:`apply_rules`).
    """

    sql: str
    n: int
    key: str = ""
    present: str = "TRUE"


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


def duplicate_rule(
    keys: list[str],
    field: str,
    what: str,
    *,
    key_exprs: list[str] | None = None,
    suspects: Suspects | None = None,
    name_first: bool = False,
) -> Rule:
    """Duplicates found with one hash aggregate (a window over every row is costly; GROUP BY is not).
    Reported at the last line of each key; ``name_first`` adds the first one, so both lines are named."""
    exprs = key_exprs or [qident(k) for k in keys]
    first = " || ' (first at line ' || first_line || ')'" if name_first else ""
    return Rule(
        field,
        "duplicate",
        "",
        f"'duplicate {what} ' || concat_ws(' / ', {', '.join(f'k{i}' for i in range(len(exprs)))}){first}",
        group_by=exprs,
        suspects=suspects,
    )


def small_int_suspects(prefix: list[str], value: str) -> Suspects:
    """Prefix groups where an integer ``value`` (a rank) repeats: each group's values are split into blocks of 64
    and a block holds a repeat exactly when its bit set has fewer bits than it has rows. Exact, and much
    cheaper than grouping by the value itself."""
    cols = ", ".join(f"{e} AS p{i}" for i, e in enumerate(prefix))
    ps = ", ".join(f"p{i}" for i in range(len(prefix)))
    present = " AND ".join(f"({e}) IS NOT NULL" for e in [*prefix, value])
    return Suspects(
        f"SELECT DISTINCT {ps} FROM (SELECT {cols} FROM {{table}} s WHERE {present} "
        f"GROUP BY {ps}, ({value}) >> 6 "
        f"HAVING count(*) <> bit_count(bit_or(1::UBIGINT << CAST(({value}) & 63 AS INTEGER))))",
        len(prefix),
    )


def hashed_suspects(keys: list[str]) -> Suspects:
    """Rows whose whole key hashes like another row's. Equal keys always have equal hashes, so no duplicate is
    missed; a hash collision only sends clean rows on to the exact check."""
    present = " AND ".join(f"({e}) IS NOT NULL" for e in keys)
    key = f"hash({', '.join(keys)})"
    return Suspects(f"SELECT {key} AS h FROM {{table}} s WHERE {present}", 0, key, present)


def unknown_ref_rule(field: str, ref_table: str, ref_col: str, what: str, severity: str = "error") -> Rule:
    return Rule(
        field,
        "unknown-" + what.replace(" ", "-"),
        f"s.{qident(field)} IS NOT NULL AND s.{qident(field)} NOT IN (SELECT {qident(ref_col)} FROM {ref_table})",
        f"'unknown {what} ' || s.{qident(field)}",
        severity,
    )


def _group_sql(table: str, r: Rule) -> str:
    assert r.group_by is not None
    # The message is built from the group keys k0..kn after grouping, never per input row.
    keys = ", ".join(f"{k} AS k{i}" for i, k in enumerate(r.group_by))
    present = " AND ".join(f"({k}) IS NOT NULL" for k in r.group_by)
    source = f"{table} s"
    if r.suspects and r.suspects.n:
        sus = r.suspects.sql.replace("{table}", table)
        on = " AND ".join(f"({r.group_by[i]}) = x.p{i}" for i in range(r.suspects.n))
        source = f"{table} s JOIN ({sus}) x ON {on}"
    elif r.suspects:
        source = f"{table} s SEMI JOIN _dup_hashes x ON hash({', '.join(r.group_by)}) = x.h"
    return (
        f"SELECT line, {r.message} AS msg FROM (SELECT max(s.line) AS line, min(s.line) AS first_line, {keys} "
        f"FROM {source} WHERE {present} GROUP BY ALL HAVING count(*) > 1)"
    )


def _report(staged: Staged, r: Rule, rows: list[tuple[object, object]], total: int, limit: int) -> list[Finding]:
    out = []
    for i, (line, msg) in enumerate(rows):
        text = str(msg)
        if staged.line_label == "row":
            text += f" (row {line})"
        if r.severity == "warning" and i == limit - 1 and total > limit:
            text += f" (and {total - limit} more like it)"
        out.append(Finding(str(staged.path), int(line), r.field, r.code, text, r.severity))  # type: ignore[call-overload]
    return out


def _row_rules(
    con: duckdb.DuckDBPyConnection, staged: Staged, rules: list[Rule], limit: int
) -> dict[int, list[Finding]]:
    """Every row rule in one scan: rows breaking none are dropped by the WHERE before any message is built."""
    if not rules:
        return {}
    hits = ", ".join(
        f"CASE WHEN ({r.where}) THEN {{'i': {i}, 'msg': CAST({r.message} AS VARCHAR)}} END" for i, r in enumerate(rules)
    )
    rows = con.execute(
        f"""WITH hit AS (
                SELECT line, unnest(list_filter([{hits}], lambda x: x IS NOT NULL)) AS h
                FROM {staged.name} s WHERE {_any_hit(rules)})
            SELECT h.i, line, h.msg, count(*) OVER (PARTITION BY h.i) AS total FROM hit
            QUALIFY row_number() OVER (PARTITION BY h.i ORDER BY line) <= {limit}
            ORDER BY h.i, line"""
    ).fetchall()
    out: dict[int, list[Finding]] = {}
    for i, r in enumerate(rules):
        mine = [(line, msg) for j, line, msg, _ in rows if j == i]
        total = next((int(t) for j, _, _, t in rows if j == i), 0)
        out[id(r)] = _report(staged, r, mine, total, limit)
    return out


def _any_hit(rules: list[Rule]) -> str:
    return " OR ".join(f"coalesce(({r.where}), FALSE)" for r in rules)


def repeated_hashes(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """The hashes ``h`` (UBIGINT) of query ``sql`` that occur more than once, as a one-column table.

    The hashes are sorted in place in numpy and neighbours compared: a hash aggregate over a key per row builds a
    group for every row, which costs more CPU than a sort of the same 8-byte keys, whatever the keys look like.
    The sorted column is the only copy held (8 bytes a row). Equal keys have equal hashes, so a caller confirms
    its suspects on the keys themselves."""
    return _repeated(_hash_column(con, f"SELECT h FROM ({sql})")[0])


def _hash_column(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[Any, bool]:
    """Column ``h`` of ``sql`` without its NULLs (rows outside a key's ``present``) in one uint64 array, and
    whether column ``hit`` (when ``sql`` has one) is true on any row.

    The rows are streamed a batch at a time into an array sized by a count first: fetching the whole result at
    once would hold DuckDB's copy of the column beside numpy's (and a masked array a third), outside the memory
    cap of a load."""
    import numpy as np
    import pyarrow.compute as pc

    from ragtriage.arrays import non_null_values

    # execute, not sql: it ends a result a caller left unfetched on ``con``, which a relation would refuse
    n = int(con.execute(f"SELECT count(*) FROM ({sql})").fetchall()[0][0])
    out, at, hit = np.empty(n, dtype=np.uint64), 0, False
    for batch in con.sql(sql).to_arrow_reader(_BATCH_ROWS):
        h = non_null_values(batch.column("h"), np.uint64)  # Array.to_numpy would import pandas
        out[at : at + len(h)] = h
        at += len(h)
        if "hit" in batch.schema.names and not hit:
            hit = bool(pc.any(batch.column("hit")).as_py())
    return out[:at], hit


def _repeated(h: Any) -> pa.Table:
    """The values of uint64 array ``h`` that occur more than once (``h`` is sorted in place)."""
    import numpy as np

    from ragtriage.arrays import over_buffer

    h.sort()
    twice = h[1:][h[1:] == h[:-1]]  # sorted: each repeated hash once per extra occurrence
    first = np.ones(len(twice), dtype=bool)
    first[1:] = twice[1:] != twice[:-1]  # not np.unique, which imports numpy.ma
    return pa.table({"h": over_buffer(twice[first])})


def _hashes_and_hits(
    con: duckdb.DuckDBPyConnection, table: str, suspects: Suspects, rules: list[Rule]
) -> tuple[pa.Table, bool]:
    """One scan for a hashed duplicate rule and the row rules of the same table: the repeated hashes, and whether
    any row breaks a row rule (the rules then build their messages over those rows)."""
    key = f"CASE WHEN {suspects.present} THEN {suspects.key} END"
    hashes, hit = _hash_column(con, f"SELECT {key} AS h, ({_any_hit(rules)}) AS hit FROM {table} s")
    return _repeated(hashes), hit


def apply_rules(con: duckdb.DuckDBPyConnection, staged: Staged, rules: list[Rule], limit: int = 50) -> list[Finding]:
    """Findings of every rule, each sorted by line and capped at ``limit`` (warnings say how many more).

    The row rules are one scan; when a duplicate rule hashes its keys (:func:`hashed_suspects`), that scan also
    takes the hashes, and the rows breaking a row rule are read again only when there are some."""
    row = [r for r in rules if not r.group_by]
    hashed = next((r for r in rules if r.suspects and r.suspects.key), None)
    known: dict[int, pa.Table] = {}
    if row and hashed is not None and hashed.suspects is not None:
        known[id(hashed)], hit = _hashes_and_hits(con, staged.name, hashed.suspects, row)
        row = row if hit else []
    by_rule: dict[int, list[Finding]] = {id(r): [] for r in rules if not r.group_by} | _row_rules(
        con, staged, row, limit
    )
    for r in rules:
        if not r.group_by:
            continue
        dups = None
        if r.suspects and not r.suspects.n:
            dups = known.get(id(r))
            if dups is None:
                dups = repeated_hashes(con, r.suspects.sql.replace("{table}", staged.name))
            if dups.num_rows == 0:
                by_rule[id(r)] = []
                continue
            # the caller's own connection: a cursor would not see rows written in its open transaction
            con.register("_dup_hashes", dups)
        try:
            sql = _group_sql(staged.name, r)
            # one grouping gives both the first rows and the total (grouping twice doubles the cost)
            found = con.execute(
                f"SELECT line, msg, count(*) OVER () AS total FROM ({sql}) ORDER BY line LIMIT {limit}"
            ).fetchall()
            rows = [(line, msg) for line, msg, _ in found]
            total = int(found[0][2]) if found else 0
        finally:
            if dups is not None:
                con.unregister("_dup_hashes")
        by_rule[id(r)] = _report(staged, r, rows, total, limit)
    return [f for r in rules for f in by_rule[id(r)]]
