"""Finding the files of a dataset or run folder, in our own layout or in TREC/BEIR's, and staging them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from ragtriage.contract.errors import Finding, ValidationFailed
from ragtriage.contract.fields import CASES, DOCUMENTS, EVENTS, LABELS, RESULTS
from ragtriage.contract.staging import Staged, stage
from ragtriage.contract.trec import stage_beir_qrels, stage_trec_qrels, stage_trec_run, stage_tsv_queries

TABLE_EXTS = (".jsonl", ".ndjson", ".csv", ".tsv", ".parquet", ".pq")


@dataclass
class Source:
    path: Path
    kind: str  # native | beir | trec | tsv


@dataclass
class DatasetFiles:
    root: Path
    manifest: Path | None
    cases: Source
    labels: Source
    documents: Source | None


@dataclass
class RunFiles:
    root: Path
    manifest: Path | None
    results: Path
    events: Path | None
    trec: bool
    fmt: str | None = None


COMPRESSED = ("", ".gz", ".bz2")


def _file(root: Path, name: str) -> Path | None:
    """``root/name``, or its ``.gz`` / ``.bz2`` form: compressed files are found under their plain name."""
    return next((p for c in COMPRESSED if (p := root / f"{name}{c}").is_file()), None)


def _glob(root: Path, pattern: str) -> list[Path]:
    return sorted(p for c in COMPRESSED for p in root.glob(f"{pattern}{c}") if p.is_file())


def _first(root: Path, stem: str) -> Path | None:
    for ext in TABLE_EXTS:
        if p := _file(root, f"{stem}{ext}"):
            return p
    return None


def _missing(root: Path, what: str, names: str) -> ValidationFailed:
    return ValidationFailed(
        [Finding(str(root), None, None, "missing-file", f"no {what} file found (looked for {names})")]
    )


def discover_dataset(root: Path) -> DatasetFiles:
    if not root.is_dir():
        raise ValidationFailed([Finding(str(root), None, None, "missing-file", "dataset path must be a folder")])
    manifest = root / "dataset.json"
    cases: Source | None = None
    if p := _first(root, "cases"):
        cases = Source(p, "native")
    elif p := _file(root, "queries.jsonl"):
        cases = Source(p, "beir")
    else:
        for name in ("queries.tsv", "topics.tsv"):
            if p := _file(root, name):
                cases = Source(p, "tsv")
                break
    if cases is None:
        raise _missing(root, "cases", "cases.jsonl|csv|parquet, BEIR queries.jsonl, queries.tsv")
    labels: Source | None = None
    if p := _first(root, "labels"):
        labels = Source(p, "native")
    else:
        trec = [_file(root, "qrels.txt"), _file(root, "qrels"), *_glob(root, "*.qrels")]
        beir = [_file(root / "qrels", "test.tsv"), _file(root, "qrels.tsv"), *_glob(root, "qrels/*.tsv")]
        labels = next((Source(p, "trec") for p in trec if p is not None), None) or next(
            (Source(p, "beir") for p in beir if p is not None), None
        )
    if labels is None:
        raise _missing(root, "labels", "labels.jsonl|csv|parquet, TREC qrels.txt / *.qrels, BEIR qrels/test.tsv")
    documents: Source | None = None
    if p := _first(root, "documents"):
        documents = Source(p, "native")
    elif p := _file(root, "corpus.jsonl"):
        documents = Source(p, "beir")
    return DatasetFiles(root, manifest if manifest.exists() else None, cases, labels, documents)


def stage_cases(con: duckdb.DuckDBPyConnection, c: Source, fmt: str | None) -> Staged:
    """Stage the cases file alone as ``stg_cases`` (the loader, and ``record``, which needs only the cases)."""
    if c.kind == "tsv":
        return stage_tsv_queries(con, c.path, "stg_cases")
    if c.kind == "beir":
        return stage(con, c.path, CASES, "stg_cases", fmt="jsonl", aliases={"id": "_id", "query": "text"})
    return stage(con, c.path, CASES, "stg_cases", fmt=fmt)


def stage_dataset(con: duckdb.DuckDBPyConnection, files: DatasetFiles, fmt: str | None) -> dict[str, Staged]:
    out: dict[str, Staged] = {"cases": stage_cases(con, files.cases, fmt)}
    lab = files.labels
    if lab.kind == "trec":
        out["labels"] = stage_trec_qrels(con, lab.path, "stg_labels")
    elif lab.kind == "beir":
        out["labels"] = stage_beir_qrels(con, lab.path, "stg_labels")
    else:
        out["labels"] = stage(con, lab.path, LABELS, "stg_labels", fmt=fmt)
    if files.documents is not None:
        d = files.documents
        aliases = {"document_id": "_id"} if d.kind == "beir" else None
        out["documents"] = stage(
            con, d.path, DOCUMENTS, "stg_documents", fmt="jsonl" if aliases else fmt, aliases=aliases
        )
    return out


def discover_run(path: Path, fmt: str | None) -> RunFiles:
    if path.is_file():
        return RunFiles(path, None, path, None, trec=fmt in (None, "trec"), fmt=None if fmt == "trec" else fmt)
    if not path.is_dir():
        raise ValidationFailed([Finding(str(path), None, None, "missing-file", "no such run folder or file")])
    manifest = path / "run.json"
    results = _first(path, "results")
    if not manifest.exists():
        raise _missing(path, "run manifest", "run.json")
    if results is None:
        trec = next(iter(_glob(path, "*.trec") + _glob(path, "*.run")), None)
        if trec is None:
            raise _missing(path, "results", "results.jsonl|csv|parquet or a *.trec / *.run file")
        return RunFiles(path, manifest, trec, _first(path, "events"), trec=True)
    return RunFiles(path, manifest, results, _first(path, "events"), trec=False, fmt=fmt)


def docno_is_chunk(con: duckdb.DuckDBPyConnection, name: str = "stg_results") -> None:
    """In chunk mode a foreign run's docno names the evaluated unit, a chunk id; its document comes from the
    corpus manifest when there is one."""
    con.execute(
        f"""UPDATE {name} SET chunk_id = document_id,
               document_id = coalesce((SELECT any_value(d.document_id) FROM documents d
                                       WHERE d.chunk_id = {name}.document_id), document_id)"""
    )


def stage_run(con: duckdb.DuckDBPyConnection, files: RunFiles, unit: str) -> tuple[dict[str, Staged], str | None]:
    tag = None
    if files.trec:
        results, facts = stage_trec_run(con, files.results, "stg_results")
        tag = next(iter(facts.tags), None)
        if unit == "chunk" and results.rows:
            docno_is_chunk(con, facts.base_table or "stg_results")
    else:
        results = stage(con, files.results, RESULTS, "stg_results", fmt=files.fmt, materialize=False)
    out = {"results": results}
    if files.events is not None:
        out["events"] = stage(con, files.events, EVENTS, "stg_events", fmt=files.fmt)
    return out, tag
