"""One figure per question: every entry point (``metrics`` by the fixed table and by name, ``compare --run``,
``compare --runs``, the TUI's overview, ``evaluate()``, ``evaluate_run``) gives pytrec_eval's value for the same run,
measure, threshold and population, to 1e-12.

The graded collection is made like Cranfield: grades 0..3, the dataset's threshold 2, queries whose labels hold no
relevant document at 2 (one of them none at 1 either), a qrels query the run does not answer (scored 0, trec_eval
``-c``) and a run query the qrels lack (ignored). Scores are distinct, so trec_eval's order is the file's.
"""

from __future__ import annotations

import json
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ragtriage
from ragtriage.app.browse.lists import summary
from ragtriage.app.browse.reads import RunCache
from ragtriage.cli import app
from ragtriage.metrics.context import using
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.store import connect
from tests.factory import SAMPLE, load_sample

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

K = 10
FIXED = ("P", "R", "RR", "nDCG", "AP")  # the fixed table's names at K
TREC = {"P": f"P_{K}", "R": f"recall_{K}", "nDCG": f"ndcg_cut_{K}", "AP": f"map_cut_{K}", "RR": "recip_rank"}
SETTINGS = [(None, "all"), (None, "with-relevant"), (1, "all"), (1, "with-relevant"), (3, "all"), (3, "with-relevant")]
DATASET_THRESHOLD = 2
runner = CliRunner()


def collection(seed: int, n_queries: int = 24) -> tuple[Qrels, Run, Run]:
    rnd = random.Random(seed)
    qrels: Qrels = {}
    runs: tuple[Run, Run] = ({}, {})
    for q in range(1, n_queries + 1):
        qid = str(q)
        docs = list(dict.fromkeys(f"D{rnd.randrange(10**6):06d}" for _ in range(30)))
        grades = [0, 1] if q % 5 == 0 else [0, 1, 2, 3]  # every fifth query: nothing relevant at 2
        qrels[qid] = {d: rnd.choice(grades) for d in rnd.sample(docs, 8)}
        if q == 10:
            qrels[qid] = {d: 0 for d in qrels[qid]}  # nothing relevant at any level
        if q == n_queries:
            continue  # a qrels query the runs do not answer
        for run in runs:
            ranked = rnd.sample(docs, rnd.randrange(5, 20))
            run[qid] = {d: round(100.0 - i - rnd.random() / 2, 6) for i, d in enumerate(ranked)}
    for run in runs:
        run["999"] = {"D000001": 1.0}  # a run query the qrels lack
    return qrels, runs[0], runs[1]


def write_trec(folder: Path, qrels: Qrels, a: Run, b: Run) -> tuple[Path, Path, Path]:
    paths = folder / "qrels.txt", folder / "a.trec", folder / "b.trec"
    paths[0].write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    for path, run, tag in ((paths[1], a, "a"), (paths[2], b, "b")):
        lines = [
            f"{q} Q0 {d} {i} {s} {tag}\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1)
        ]
        path.write_text("".join(lines))
    return paths


def reference(qrels: Qrels, run: Run, threshold: int, cases: str) -> dict[str, float]:
    """pytrec_eval's means over the population: every qrels query (absent from the run: 0), or those with a
    relevant label at ``threshold``; RR@K is recip_rank over each list cut at K."""
    cut = {q: dict(sorted(d.items(), key=lambda x: -x[1])[:K]) for q, d in run.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values()), relevance_level=threshold)
    per_query = ev.evaluate({q: d for q, d in run.items() if q in qrels})
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=threshold).evaluate(
        {q: d for q, d in cut.items() if q in qrels}
    )
    population = [q for q in qrels if cases == "all" or max(qrels[q].values()) >= threshold]
    out = {}
    for name, trec in TREC.items():
        source = rr if name == "RR" else per_query
        out[f"{name}@{K}"] = statistics.fmean(source[q][trec] if q in source else 0.0 for q in population)
    out["n"] = float(len(population))
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("one_figure")
    qrels, a, b = collection(46)
    q, ra, rb = write_trec(folder, qrels, a, b)
    db = folder / "store.duckdb"  # a file store, loaded as a user loads it (default memory cap)
    for args in (
        ["--qrels", q, "--threshold", str(DATASET_THRESHOLD), "--run", ra, "--run-id", "a"],
        ["--run", rb, "--run-id", "b"],
    ):
        res = runner.invoke(app, ["load", "--db", str(db), *map(str, args)])
        assert res.exit_code == 0, res.output
    return {"db": db, "qrels": qrels, "a": a, "paths": (q, ra, rb)}


def _cli(*args: str) -> dict[str, Any]:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    parsed: dict[str, Any] = json.loads(res.stdout)
    return parsed


def _options(threshold: int | None, cases: str) -> list[str]:
    return ["--cases", cases, *(["--threshold", str(threshold)] if threshold is not None else [])]


def metrics_fixed(db: Path, run: str, base: str, threshold: int | None, cases: str) -> dict[str, float]:
    out = _cli("metrics", "--db", str(db), "--run", run, "--k", str(K), "--format", "json", *_options(threshold, cases))
    return {r["measure@k"]: r["mean"] for r in out["rows"]} | {"n": float(out["context"]["cases"])}


def metrics_named(db: Path, run: str, base: str, threshold: int | None, cases: str) -> dict[str, float]:
    names = [x for m in FIXED for x in ("--measure", f"{m}@{K}")]
    out = _cli("metrics", "--db", str(db), "--run", run, *names, "--format", "json", *_options(threshold, cases))
    return {r["measure"]: r["value"] for r in out["rows"]} | {"n": float(out["context"]["cases"])}


def compare_one(db: Path, run: str, base: str, threshold: int | None, cases: str) -> dict[str, float]:
    args = ["compare", "--db", str(db), "--run", run, "--baseline", base, "--k", str(K), "--format", "json"]
    rows = [r for r in _cli(*args, *_options(threshold, cases))["rows"] if r["slice"] == "all"]
    return {r["metric"]: r["candidate"] for r in rows} | {"n": float(rows[0]["n"])}


def compare_many(db: Path, run: str, base: str, threshold: int | None, cases: str) -> dict[str, float]:
    names = [x for m in FIXED for x in ("--measure", f"{m}@{K}")]
    args = ["compare", "--db", str(db), "--runs", run, "--baseline", base, *names, "--format", "json"]
    rows = [r for r in _cli(*args, *_options(threshold, cases))["table"] if r["run_id"] == run]
    return {r["measure"]: r["mean"] for r in rows} | {"n": float(rows[0]["n"])}


def tui_overview(db: Path, run: str, base: str, threshold: int | None, cases: str) -> dict[str, float]:
    con = connect(db, read_only=True)
    try:
        with using(cases=cases, threshold=threshold):
            table = summary(con, run, None, RunCache(K)).table.to_pylist()
    finally:
        con.close()
    rows = {r["name"]: r for r in table}
    return {f"{m}@{K}": rows[f"{m}@{K}"]["mean"] for m in FIXED} | {"n": float(rows[f"P@{K}"]["n"])}


def store_api(db: Path, run: str, base: str, threshold: int | None, cases: str) -> dict[str, float]:
    con = connect(db, read_only=True)
    try:
        with using(cases=cases, threshold=threshold):
            res = evaluate_run(con, run, [f"{m}@{K}" for m in FIXED])
    finally:
        con.close()
    return {r["measure"]: r["value"] for r in res.aggregate.to_pylist()} | {"n": float(res.context["cases"])}


ENTRY_POINTS: dict[str, Callable[[Path, str, str, int | None, str], dict[str, float]]] = {
    "metrics --k": metrics_fixed,
    "metrics --measure": metrics_named,
    "compare --run": compare_one,
    "compare --runs": compare_many,
    "tui overview": tui_overview,
    "evaluate_run": store_api,
}


@pytest.mark.parametrize(("threshold", "cases"), SETTINGS)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_gives_pytrec_evals_figure(
    graded: dict[str, Any], entry: str, threshold: int | None, cases: str
) -> None:
    level = DATASET_THRESHOLD if threshold is None else threshold
    expected = reference(graded["qrels"], graded["a"], level, cases)
    got = ENTRY_POINTS[entry](graded["db"], "a", "b", threshold, cases)
    assert set(expected) <= set(got), entry
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), (entry, name, threshold, cases)


@pytest.mark.parametrize(("threshold", "cases"), SETTINGS)
def test_evaluate_gives_the_same_figures_from_the_files(
    graded: dict[str, Any], threshold: int | None, cases: str
) -> None:
    level = DATASET_THRESHOLD if threshold is None else threshold
    qrels, run, _ = graded["paths"]
    res = ragtriage.evaluate(qrels, run, [f"{m}@{K}" for m in FIXED], threshold=level, cases=cases)
    got = {r["measure"]: r["value"] for r in res.aggregate.to_pylist()} | {"n": float(res.context["cases"])}
    expected = reference(graded["qrels"], graded["a"], level, cases)
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), (name, threshold, cases)


def test_the_collection_holds_what_the_grid_relies_on(graded: dict[str, Any]) -> None:
    qrels: Qrels = graded["qrels"]
    none_at_2 = [q for q, d in qrels.items() if max(d.values()) < DATASET_THRESHOLD]
    none_at_1 = [q for q, d in qrels.items() if max(d.values()) < 1]
    assert len(none_at_2) >= 4 and none_at_1 and set(qrels) - set(graded["a"])
    # so the populations differ, and a dropped case or a NULL instead of 0 would move every mean
    assert reference(qrels, graded["a"], 2, "all")["n"] > reference(qrels, graded["a"], 2, "with-relevant")["n"]


def test_exponential_gain_is_never_named_plain_ndcg(graded: dict[str, Any]) -> None:
    out = _cli("metrics", "--db", str(graded["db"]), "--run", "a", "--k", str(K), "--gain", "exponential",
               "--format", "json")  # fmt: skip
    names = [r["measure@k"] for r in out["rows"]]
    assert f"nDCG(dcg='exp-log2')@{K}" in names and f"nDCG@{K}" not in names


def test_an_option_a_store_cannot_honour_is_refused_by_name(graded: dict[str, Any]) -> None:
    res = runner.invoke(app, ["tui", "--db", str(graded["db"]), "--grade-map", "3:2"])
    assert res.exit_code == 2 and "--grade-map" in res.output


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**16),
    threshold=st.integers(1, 3),
    cases=st.sampled_from(["all", "with-relevant"]),
)
def test_any_collection_agrees_with_pytrec_eval(seed: int, threshold: int, cases: str) -> None:
    qrels, a, _ = collection(seed, n_queries=8)
    got = ragtriage.evaluate(qrels, a, [f"{m}@{K}" for m in FIXED], threshold=threshold, cases=cases)
    values = {r["measure"]: r["value"] for r in got.aggregate.to_pylist()}
    expected = reference(qrels, a, threshold, cases)
    if expected["n"] == 0:
        assert got.context["cases"] == 0
        return
    for name in values:
        assert values[name] == pytest.approx(expected[name], abs=1e-12), (name, seed, threshold, cases)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (SAMPLE / "dataset").is_dir():
        pytest.skip("sample_runs not generated")
    return load_sample(tmp_path_factory.mktemp("sample") / "triage.duckdb", ("bm25", "hybrid-rerank"))


def sample_reference(db: Path, run: str, threshold: int | None, cases: str) -> dict[str, float]:
    """pytrec_eval over the store's own qrels and each list de-duplicated to a unit's first occurrence (lowest
    rank), on the default population: answerable cases with a label."""
    con = connect(db, read_only=True)
    try:
        level = threshold if threshold is not None else con.sql("SELECT relevance_threshold FROM current_dataset")
        level = int(level if isinstance(level, int) else level.fetchall()[0][0])
        labelled = "SELECT case_id FROM cases WHERE answerable"
        qrels: Qrels = {}
        for case, unit, grade in con.execute(
            f"SELECT case_id, unit_id, grade FROM qrels WHERE case_id IN ({labelled})"
        ).fetchall():
            qrels.setdefault(case, {})[unit] = int(grade)
        lists: Run = {}
        for case, unit, rank in con.execute(
            "SELECT case_id, unit_id, min(rank) FROM results WHERE run_id = ? AND stage = 'final' GROUP BY ALL",
            [run],
        ).fetchall():
            lists.setdefault(case, {})[unit] = -float(rank)  # trec order = the de-duplicated positions
    finally:
        con.close()
    return reference(qrels, lists, level, cases)


@pytest.mark.slow
@pytest.mark.parametrize(("threshold", "cases"), [(None, "all"), (None, "with-relevant"), (1, "all"), (3, "all")])
def test_every_entry_point_agrees_on_the_sample(sample: Path, threshold: int | None, cases: str) -> None:
    expected = sample_reference(sample, "hybrid-rerank", threshold, cases)
    for entry, fn in ENTRY_POINTS.items():
        got = fn(sample, "hybrid-rerank", "bm25", threshold, cases)
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, abs=1e-12), (entry, name, threshold, cases)


def test_a_run_without_a_run_json_k_is_judged_at_10_and_says_so(graded: dict[str, Any]) -> None:
    db = str(graded["db"])
    out = _cli("failures", "--db", db, "--run", "a", "--summary", "--format", "json")
    assert out["context"]["k"] == "10 (default)"
    asked = _cli("failures", "--db", db, "--run", "a", "--summary", "--k", "5", "--format", "json")
    assert asked["context"]["k"] == "5 (--k)"
    con = connect(graded["db"], read_only=True)
    try:  # the lists hold up to 19 results: the list depth is not the k
        assert con.execute("SELECT k FROM runs WHERE run_id = 'a'").fetchall() == [(10,)]
    finally:
        con.close()
