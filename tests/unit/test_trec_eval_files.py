"""``metrics --trec-compat --format trec --per-case`` prints exactly what trec_eval prints for its own test files
(tests/data/trec_eval: -q; -q -c with queries missing from the run; -q -l2 with grades -1..4), line for line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.factory import make_store

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
runner = CliRunner()


def _rows(name: str) -> list[list[str]]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        return [line.split() for line in f if line.strip()]


def _store(tmp_path: Path, qrels: str, results: str, threshold: int) -> Path:
    labels = [{"case_id": q, "document_id": d, "chunk_id": d, "grade": int(g)} for q, _, d, g in _rows(qrels)]
    rows = [
        {"case_id": q, "document_id": d, "chunk_id": d, "rank": int(r), "score": float(s)}
        for q, _, d, r, s, *_ in _rows(results)  # trec_eval ignores columns after the tag
    ]
    cases = [{"id": q, "query": q} for q in sorted({lab["case_id"] for lab in labels})]
    dataset = {"name": "trec_eval", "version": "1", "unit": "chunk", "relevance_threshold": threshold}
    dataset["grade_scale"] = {"min": -1, "max": 4}
    con = make_store(
        tmp_path,
        dataset=dataset,
        cases=cases,
        labels=labels,
        runs=[{"run": {"run_id": "STANDARD", "k": 1000}, "results": rows}],
    )
    con.close()
    return next(tmp_path.glob("*.duckdb"))


@pytest.mark.parametrize(
    ("qrels", "results", "threshold", "expected"),
    [
        ("qrels.test.gz", "results.test.gz", 1, "out.test.aq"),
        ("qrels.test.gz", "results.trunc.gz", 1, "out.test.aqc"),
        ("qrels.rel_level.gz", "results.test.gz", 2, "out.test.aql"),
    ],
)
@pytest.mark.slow
def test_same_lines_as_trec_eval(tmp_path: Path, qrels: str, results: str, threshold: int, expected: str) -> None:
    db = _store(tmp_path, qrels, results, threshold)
    lines = (DATA / expected).read_text().splitlines()
    names = list(dict.fromkeys(line.split()[0] for line in lines if "\tall\t" in line))
    args = ["metrics", "--db", str(db), "--run", "STANDARD", "--trec-compat", "--format", "trec", "--per-case"]
    for name in names:
        args += ["--measure", name]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == lines


@pytest.mark.parametrize(
    ("qrels", "results", "threshold", "expected"),
    [
        ("qrels.test.gz", "results.test.gz", None, "out.test.aq"),
        ("qrels.test.gz", "results.trunc.gz", None, "out.test.aqc"),
        ("qrels.rel_level.gz", "results.test.gz", 2, "out.test.aql"),
    ],
)
def test_store_less_same_lines_as_trec_eval(qrels: str, results: str, threshold: int | None, expected: str) -> None:
    """``metrics --qrels F --run F`` reads the gzipped files themselves (in-memory store, no --db)."""
    lines = (DATA / expected).read_text().splitlines()
    names = list(dict.fromkeys(line.split()[0] for line in lines if "\tall\t" in line))
    args = ["metrics", "--qrels", str(DATA / qrels), "--run", str(DATA / results), "--trec-compat"]
    args += ["--format", "trec", "--per-case", *(["--threshold", str(threshold)] if threshold else [])]
    for name in names:
        args += ["-m", name]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == lines
