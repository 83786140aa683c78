"""A small dataset and run cut from the shipped sample, a store loaded from them, and a digest of a store's
content: the ground for the bad-input corpus and the loader fuzz test (which mutate copies of these files and
check that a refused load changed nothing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
from typer.testing import CliRunner, Result

from ragtriage.cli import app
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect, load_dataset, load_run

N_CASES = 3
RUN = "no-acl-filter"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def make_base(root: Path) -> tuple[Path, Path, Path]:
    """(dataset folder, run folder, store) for the first cases of the sample; the store holds both."""
    sample = sample_runs_path()
    ds, run = root / "dataset", root / "run"
    ds.mkdir(parents=True)
    run.mkdir(parents=True)
    cases = _rows(sample / "dataset" / "cases.jsonl")[:N_CASES]
    ids = {c["id"] for c in cases}
    labels = [r for r in _rows(sample / "dataset" / "labels.jsonl") if r["case_id"] in ids]
    results = [r for r in _rows(sample / "runs" / RUN / "results.jsonl") if r["case_id"] in ids and r["rank"] <= 8]
    units = {r["chunk_id"] for r in labels + results}
    docs = [d for d in _rows(sample / "dataset" / "documents.jsonl") if d["chunk_id"] in units]
    events = [e for e in _rows(sample / "runs" / RUN / "events.jsonl") if e["case_id"] in ids]
    write_rows(ds / "cases.jsonl", cases)
    write_rows(ds / "labels.jsonl", labels)
    write_rows(ds / "documents.jsonl", docs)
    shutil.copy(sample / "dataset" / "dataset.json", ds / "dataset.json")
    write_rows(run / "results.jsonl", results)
    write_rows(run / "events.jsonl", events)
    shutil.copy(sample / "runs" / RUN / "run.json", run / "run.json")
    db = root / "base.duckdb"
    con = connect(db)
    load_dataset(con, ds)
    load_run(con, run)
    con.close()
    return ds, run, db


def digest(db: Path) -> dict[str, tuple[int, str]]:
    """Row count and an order-independent hash of every table of the store."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()]
        out = {}
        for name in names:
            h = "md5(CAST(t AS VARCHAR))"
            row = con.execute(
                f"SELECT count(*), coalesce(md5(string_agg({h}, ',' ORDER BY {h})), '') FROM \"{name}\" t"
            ).fetchall()[0]
            out[name] = (int(row[0]), str(row[1]))
        return out
    finally:
        con.close()


def copy_case(base: Path, ds: Path, run: Path, into: Path) -> tuple[Path, Path, Path]:
    """Fresh copies of the dataset folder, run folder and store under ``into``, for one variant."""
    into.mkdir(parents=True, exist_ok=True)
    new_ds, new_run, new_db = into / "dataset", into / "run", into / "store.duckdb"
    shutil.copytree(ds, new_ds)
    shutil.copytree(run, new_run)
    shutil.copy(base, new_db)
    return new_ds, new_run, new_db


def load(db: Path, *, dataset: Path | None = None, run: Path | None = None, strict: bool = False) -> Result:
    """``ragtriage load`` of ``dataset`` and/or ``run`` (replacing the run) into ``db``, in this process."""
    args = ["load", "--db", str(db), "--no-precompute", *(["--strict"] if strict else [])]
    args += ["--dataset", str(dataset)] if dataset is not None else []
    args += ["--run", str(run), "--replace"] if run is not None else []
    return CliRunner().invoke(app, args)


def no_traceback(res: Result) -> bool:
    return res.exception is None or isinstance(res.exception, SystemExit)
