"""Grade scales other than 0..3: a grade map applied at load, and the scale a foreign qrels file actually uses.

TREC collections grade 0..1, 0..2 or 0..4, some -2..4 (negative: judged but unusable, e.g. spam); crowdsourced
sets grade 1..4. ``--grade-map 4:3,3:2,2:1,1:0`` rewrites grades before anything else sees them; grades not in
the map keep their value. The map is part of the dataset version's identity and is stored with it.

Negative grades are kept as they are. trec_eval reads a negative relevance as "in the pool but not judged"
(form_res_rels.c: RELVALUE_UNJUDGED): never relevant (no threshold admits it), gain 0, and not a judged
non-relevant document for bpref. The store keeps the grade so the measures can tell it apart.
"""

from __future__ import annotations

import re

import duckdb

from ragtriage.contract.manifest import DatasetManifest


def parse_grade_map(spec: str | dict[int, int] | None) -> dict[int, int]:
    """``"4:3,3:2"`` or ``{4: 3, 3: 2}`` -> {4: 3, 3: 2}; a ValueError names the bad part."""
    if spec is None or spec == "":
        return {}
    if isinstance(spec, dict):
        items = list(spec.items())
    else:
        items = []
        for part in spec.split(","):
            m = re.fullmatch(r"\s*([+-]?\d+)\s*:\s*([+-]?\d+)\s*", part)
            if m is None:
                raise ValueError(f"--grade-map: {part.strip()!r} is not FROM:TO with integers (e.g. 4:3,3:2,2:1,1:0)")
            items.append((int(m.group(1)), int(m.group(2))))
    out: dict[int, int] = {}
    for src, dst in items:
        if isinstance(src, bool) or isinstance(dst, bool) or not isinstance(src, int) or not isinstance(dst, int):
            raise ValueError(f"--grade-map: {src!r}:{dst!r} must map an integer grade to an integer grade")
        if src in out and out[src] != dst:
            raise ValueError(f"--grade-map: grade {src} is mapped twice ({out[src]} and {dst})")
        out[src] = dst
    return out


def apply_grade_map(con: duckdb.DuckDBPyConnection, table: str, grade_map: dict[int, int]) -> None:
    """Rewrite the staged labels' grades in one UPDATE (all pairs at once, so 2:1,1:0 never chains)."""
    cases = " ".join(f"WHEN {int(a)} THEN {int(b)}" for a, b in sorted(grade_map.items()))
    con.execute(f"UPDATE {table} SET grade = CASE grade {cases} ELSE grade END")


def derived_scale(con: duckdb.DuckDBPyConnection, table: str, m: DatasetManifest) -> tuple[int, int]:
    """The scale of a dataset without dataset.json: from min(0, lowest grade) to max(highest grade, threshold)."""
    lo, hi = con.execute(f"SELECT min(grade), max(grade) FROM {table}").fetchall()[0]
    lo = min(0, int(lo)) if lo is not None else 0
    hi = max(int(hi) if hi is not None else 1, m.relevance_threshold, lo + 1)
    return lo, hi
