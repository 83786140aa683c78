"""What a store holds, as plain data for `ragtriage info`, the TUI header and reports."""

from __future__ import annotations

from typing import Any

import duckdb


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def store_info(
    con: duckdb.DuckDBPyConnection, *, with_warnings: bool = False, limit: int | None = None
) -> dict[str, Any]:
    """Dataset, counts, runs, warning counts and loads; with ``with_warnings`` the first ``limit`` warnings
    (all when None) and ``warnings_total``, so a capped list can say how much it left out."""
    ds = _rows(con, "SELECT * EXCLUDE (manifest, rubric) FROM current_dataset")
    counts = _rows(
        con,
        """SELECT (SELECT count(*) FROM cases) AS cases,
                  (SELECT count(*) FROM cases WHERE answerable) AS answerable,
                  (SELECT count(*) FROM cases WHERE NOT answerable) AS negative,
                  (SELECT count(*) FROM labels) AS labels,
                  (SELECT count(*) FROM documents) AS documents,
                  (SELECT count(DISTINCT document_id) FROM documents) AS corpus_documents""",
    )[0]
    runs = _rows(
        con,
        """SELECT r.run_id, r.k, r.candidate_k, r.dataset_version, r.loaded_at, r.source_format,
                  coalesce(sum(CASE WHEN x.stage = 'final' THEN x.n END), 0) AS final_rows,
                  coalesce(sum(CASE WHEN x.stage = 'candidate' THEN x.n END), 0) AS candidate_rows,
                  (SELECT count(*) FROM events e WHERE e.run_id = r.run_id) AS events
           FROM runs r LEFT JOIN (SELECT run_id, stage, count(*) AS n FROM results GROUP BY ALL) x USING (run_id)
           GROUP BY ALL ORDER BY r.run_id""",
    )
    warning_counts = _rows(
        con, "SELECT target, code, count(*) AS n FROM load_warnings GROUP BY ALL ORDER BY target, code"
    )
    out: dict[str, Any] = {
        "dataset": ds[0] if ds else None,
        "counts": counts,
        "runs": runs,
        "warning_counts": warning_counts,
        "loads": _rows(con, "SELECT * FROM loads ORDER BY load_id"),
    }
    if with_warnings:
        cap = "" if limit is None else f" LIMIT {int(limit)}"
        out["warnings"] = _rows(con, f"SELECT * FROM load_warnings ORDER BY target, file, line{cap}")
        out["warnings_total"] = sum(int(w["n"]) for w in warning_counts)
    return out
