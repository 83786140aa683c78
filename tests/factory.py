"""Build a store for a test from Python dicts, through the real files-and-loader path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from ragtriage.store import connect, load_dataset, load_run

DEFAULT_DATASET = {"name": "t", "version": "1", "unit": "chunk", "relevance_threshold": 2}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_dataset(
    root: Path,
    *,
    dataset: dict[str, Any] | None = None,
    cases: list[dict[str, Any]],
    labels: list[dict[str, Any]],
    documents: list[dict[str, Any]] | None = None,
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "dataset.json").write_text(json.dumps(dataset or DEFAULT_DATASET), encoding="utf-8")
    write_jsonl(root / "cases.jsonl", cases)
    write_jsonl(root / "labels.jsonl", labels)
    if documents is not None:
        write_jsonl(root / "documents.jsonl", documents)
    return root


def write_run(
    root: Path, run: dict[str, Any], results: list[dict[str, Any]], events: list[dict[str, Any]] | None
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "run.json").write_text(json.dumps(run), encoding="utf-8")
    write_jsonl(root / "results.jsonl", results)
    if events:
        write_jsonl(root / "events.jsonl", events)
    return root


def make_store(
    tmp_path: Path,
    *,
    dataset: dict[str, Any] | None = None,
    cases: list[dict[str, Any]],
    labels: list[dict[str, Any]],
    documents: list[dict[str, Any]] | None = None,
    runs: list[dict[str, Any]] | None = None,
    db: str = "store.duckdb",
    allow_control_ids: bool = False,
) -> duckdb.DuckDBPyConnection:
    """``runs`` items: {"run": {run.json fields}, "results": [...], "events": [...]} (events optional).

    Results without an explicit ``rank`` get ranks 1..n in list order per (case, stage). ``allow_control_ids``
    loads ids holding control characters (hostile fixtures) as ``--allow-control-ids`` does.
    """
    con = connect(tmp_path / db)
    strict = not allow_control_ids
    load_dataset(
        con,
        write_dataset(tmp_path / "dataset", dataset=dataset, cases=cases, labels=labels, documents=documents),
        strict=strict,
    )
    for i, r in enumerate(runs or []):
        rows, counters = [], {}
        for row in r["results"]:
            row = dict(row)
            if "rank" not in row:
                key = (row["case_id"], row.get("stage", "final"))
                counters[key] = counters.get(key, 0) + 1
                row["rank"] = counters[key]
            rows.append(row)
        load_run(con, write_run(tmp_path / f"run{i}", r["run"], rows, r.get("events")), strict=strict)
    return con


SAMPLE = Path(__file__).resolve().parents[1] / "sample_runs"
SAMPLE_RUNS = ("bm25", "dense", "hybrid-rerank", "no-acl-filter")


def load_sample(path: Path, runs: tuple[str, ...] = SAMPLE_RUNS) -> Path:
    """The shipped sample dataset and ``runs`` loaded into a new store at ``path`` (closed again); returns path."""
    con = connect(path)
    try:
        load_dataset(con, SAMPLE / "dataset")
        for run in runs:
            load_run(con, SAMPLE / "runs" / run)
    finally:
        con.close()
    return path
