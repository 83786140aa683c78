"""One measure engine: the fixed per-case table (``metrics.per_case``) and every measure asked by its ir_measures
string (``metrics.measure_eval.evaluate_run``) give the same value for every case, to 1e-12, on the sample and on
a pair of TREC files with tied scores (trec_eval's order: score descending, docno descending, file rank ignored).
Both ask ``metrics.engine``; this holds the two shapes the engine reads (lists cut at the deepest cutoff for the
fixed table, every judged unit at its position in the whole list for measure strings) to the same figures."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from ragtriage.metrics import per_case
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.metrics.per_case import MEASURES
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource, load_inputs

KS = (1, 3, 5, 10)
SAMPLE_RUNS = ("bm25", "dense", "hybrid-rerank", "no-acl-filter")


def _spellings(name: str, k: int, threshold: int, gain: str) -> list[str]:
    """The ir_measures strings of one fixed-table column: the short name and the spelled-out parameters."""
    if name == "nDCG":
        return [f"nDCG@{k}", f"nDCG(dcg='{'exp-log2' if gain == 'exponential' else 'log2'}')@{k}"]
    if name == "Judged":
        return [f"Judged@{k}"]
    return [f"{name}@{k}", f"{name}(rel={threshold})@{k}"]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-12)


def _check(con, run_id: str, gain: str = "exponential") -> int:
    threshold = int(con.execute("SELECT relevance_threshold FROM current_dataset").fetchone()[0])
    fixed = {r["case_id"]: r for r in per_case(con, run_id, KS, gain=gain, counts=False).to_pylist()}
    asked = {f"{m}@{k}": _spellings(m, k, threshold, gain) for k in KS for m in MEASURES}
    names = [s for spellings in asked.values() for s in spellings]
    # with an uncut measure beside them too (other aggregates in the same statement)
    for extra in ([], ["AP"]):
        res = evaluate_run(con, run_id, [*names, *extra, "NumRel"], gain=gain)
        wide = {r["case_id"]: r for r in res.wide.to_pylist()}
        assert set(wide) == set(fixed)
        columns = dict(zip([*names, *extra, "NumRel"], res.wide.column_names[1:], strict=True))
        checked = 0
        for case_id, row in fixed.items():
            assert row["n_relevant"] == wide[case_id][columns["NumRel"]]
            for column, spellings in asked.items():
                for s in spellings:
                    assert _same(row[column], wide[case_id][columns[s]]), (run_id, case_id, column, s)
                    checked += 1
    return checked


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    con = connect(db)
    root = sample_runs_path()
    load_inputs(con, LoadRequest(dataset=root / "dataset", runs=[RunSource(root / "runs" / r) for r in SAMPLE_RUNS]))
    yield con
    con.close()


@pytest.mark.parametrize("run_id", SAMPLE_RUNS)
def test_fixed_table_equals_measure_strings_on_the_sample(sample, run_id: str) -> None:
    assert _check(sample, run_id) > 1000
    assert _check(sample, run_id, gain="linear") > 1000


def _trec_pair(tmp_path: Path) -> tuple[Path, Path]:
    """qrels with grades 0..3 (threshold 2), queries with and without relevant labels, one unlabelled query in the
    run; a run with scores rounded to one decimal (many ties) and file ranks that disagree with the scores."""
    rng = random.Random(7)
    qrels, run = [], []
    for q in range(40):
        for d in rng.sample(range(60), rng.randint(1, 12)):
            grade = rng.choice([0, 0, 1, 2, 3]) if q % 7 else rng.choice([0, 1])
            qrels.append(f"q{q} 0 doc{d:02d} {grade}")
        if q % 9 == 4:
            continue  # absent from the run
        docs = rng.sample(range(60), rng.randint(1, 30))
        ranks = list(range(1, len(docs) + 1))
        rng.shuffle(ranks)
        run += [f"q{q} Q0 doc{d:02d} {r} {round(rng.random(), 1)} tied" for d, r in zip(docs, ranks, strict=True)]
    run.append("q99 Q0 doc01 1 0.5 tied")  # a topic without labels: ignored, as trec_eval does
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n")
    (tmp_path / "run.txt").write_text("\n".join(run) + "\n")
    return tmp_path / "qrels.txt", tmp_path / "run.txt"


def test_fixed_table_equals_measure_strings_on_a_trec_pair_with_ties(tmp_path: Path) -> None:
    qrels, run = _trec_pair(tmp_path)
    con = connect(tmp_path / "trec.duckdb")
    try:
        load_inputs(con, LoadRequest(qrels=qrels, runs=[RunSource(run, run_id="tied")], threshold=2))
        scores = con.execute("SELECT count(*) - count(DISTINCT (case_id, score)) FROM results").fetchone()[0]
        assert scores > 100  # ties the loader ordered by docno
        assert _check(con, "tied") > 1000
        assert _check(con, "tied", gain="linear") > 1000
    finally:
        con.close()
