"""``metrics --trec-compat --format trec --per-case`` prints exactly what trec_eval prints, line for line, on the
seeded files of tests/trec_fixtures.py: ``-q`` with tied scores, ``-q -c`` with qrels topics missing from a
truncated run (and columns after its tag), ``-q -l2`` with grades -1..4. The expected lines are built from
pytrec_eval's per-query values (trec_eval's C code) in trec_eval's print layout (tests/trec_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.factory import make_store
from tests.trec_fixtures import TREC_MEASURES, Files, read_qrels, read_run, trec_eval_lines

runner = CliRunner()
#: (qrels, run, relevance level): trec_eval's quicktest out.test.aq, out.test.aqc and out.test.aql, on our files
CONFIGS = [("qrels.gz", "run.gz", 1), ("qrels.gz", "trunc.gz", 1), ("graded.gz", "run.gz", 2)]


def expected(files: Files, qrels: str, run: str, level: int) -> list[str]:
    return trec_eval_lines(read_qrels(files(qrels)), read_run(files(run)), TREC_MEASURES, level)


def _store(tmp_path: Path, files: Files, qrels: str, results: str, threshold: int) -> Path:
    judged = read_qrels(files(qrels))
    labels = [
        {"case_id": q, "document_id": d, "chunk_id": d, "grade": g}
        for q, docs in judged.items()
        for d, g in docs.items()
    ]
    ranked = read_run(files(results))
    # recorded ranks in reverse file order, not trec_eval's: trec-compat ranks by score and docno whatever they say
    ranks = {q: dict(zip(docs, reversed(range(1, len(docs) + 1)), strict=True)) for q, docs in ranked.items()}
    rows = [
        {"case_id": q, "document_id": d, "chunk_id": d, "rank": ranks[q][d], "score": s}
        for q, docs in ranked.items()
        if q in judged  # a run topic the qrels lack is no case of the store
        for d, s in docs.items()
    ]
    cases = [{"id": q, "query": q} for q in sorted(judged)]
    dataset = {"name": "seeded", "version": "1", "unit": "chunk", "relevance_threshold": threshold}
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


@pytest.mark.parametrize(("qrels", "results", "threshold"), CONFIGS)
@pytest.mark.slow
def test_same_lines_as_trec_eval(tmp_path: Path, trec_files: Files, qrels: str, results: str, threshold: int) -> None:
    db = _store(tmp_path, trec_files, qrels, results, threshold)
    args = ["metrics", "--db", str(db), "--run", "STANDARD", "--trec-compat", "--format", "trec", "--per-case"]
    for name in TREC_MEASURES:
        args += ["--measure", name]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == expected(trec_files, qrels, results, threshold)


@pytest.mark.parametrize(("qrels", "results", "threshold"), CONFIGS)
def test_store_less_same_lines_as_trec_eval(trec_files: Files, qrels: str, results: str, threshold: int) -> None:
    """``metrics --qrels F --run F`` reads the gzipped files themselves (in-memory store, no --db)."""
    args = ["metrics", "--qrels", str(trec_files(qrels)), "--run", str(trec_files(results)), "--trec-compat"]
    args += ["--format", "trec", "--per-case", *(["--threshold", str(threshold)] if threshold > 1 else [])]
    for name in TREC_MEASURES:
        args += ["-m", name]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == expected(trec_files, qrels, results, threshold)
