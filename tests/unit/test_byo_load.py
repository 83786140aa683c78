"""Bring-your-own-data loading: every qrels and run format gives trec_eval's figures (pytrec_eval as reference).

The data are the small seeded collection of tests/trec_fixtures.py: grades -1..4, tied scores, docnos that sort
differently as strings and as numbers, tab-separated runs with space-padded scores. Each test writes the same
judgements and rankings in another format (gzip, bzip2, BEIR with and without header, JSON, MS MARCO, dicts,
DataFrames, the contract's JSONL) and checks the per-query trec_eval figures the store then gives.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.metrics.measures import measures_for_ks
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource, load_inputs
from tests.trec_fixtures import TAG, write_files

pytrec_eval = pytest.importorskip("pytrec_eval")

_FOLDER = tempfile.TemporaryDirectory(prefix="ragtriage-byo-")  # removed when the test process ends
DATA = write_files(Path(_FOLDER.name))
QRELS, RESULTS = DATA("small.qrels"), DATA("small.run")
TOPICS = sorted(DATA.small.qrels, key=int)  # numeric order; the store orders case ids as strings
LABELS = sum(len(docs) for docs in DATA.small.qrels.values())
ROWS = len(DATA.small.lines)
KS = (5, 10)
NAMES = [f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut") for k in KS] + ["recip_rank"]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


def read_qrels(grade_map: dict[int, int] | None = None) -> Qrels:
    out: Qrels = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, g = line.split()
        out.setdefault(q, {})[d] = (grade_map or {}).get(int(g), int(g))
    return out


def read_run() -> Run:
    out: Run = {}
    for line in RESULTS.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        out.setdefault(q, {})[d] = float(s)
    return out


def trec_order(run: Run) -> list[tuple[str, str, float]]:
    """(qid, docno, score) in trec_eval's order: score descending, docno descending."""
    rows = sorted(((q, d, s) for q, docs in run.items() for d, s in docs.items()), key=lambda r: r[1], reverse=True)
    return sorted(rows, key=lambda r: (r[0], -r[2]))  # stable: docno descending (strcmp order) within ties


def reference(qrels: Qrels, run: Run, level: int = 1) -> dict[str, dict[str, float]]:
    measures = {f"P.{'5,10'}", "recall.5,10", "ndcg_cut.5,10", "map_cut.5,10", "recip_rank"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)  # type: ignore[no-any-return]


def trec_rows(con: Any, run_id: str) -> list[dict[str, Any]]:
    """One row per query, trec_eval's measure names, as ``metrics --trec-compat`` computes them."""
    return evaluate_run(con, run_id, measures_for_ks(KS, trec=True), trec_compat=True).trec_wide.to_pylist()


def assert_agrees(con: Any, run_id: str, qrels: Qrels, run: Run, level: int = 1) -> None:
    ref = reference(qrels, run, level)
    ours = {r["case_id"]: r for r in trec_rows(con, run_id)}
    assert set(ours) == set(qrels)
    for qid, row in ours.items():
        for name in NAMES:
            assert row[name] == pytest.approx(ref.get(qid, {}).get(name, 0.0), abs=1e-9), (qid, name)


# --- writers: the same qrels and run in each format -------------------------------------------------------


def _text(path: Path, lines: list[str], compress: str = "") -> Path:
    data = ("\n".join(lines) + "\n").encode()
    if compress == "gz":
        path.write_bytes(gzip.compress(data))
    elif compress == "bz2":
        path.write_bytes(bz2.compress(data))
    else:
        path.write_bytes(data)
    return path


def qrels_trec(tmp: Path, compress: str = "") -> Path:
    return _text(tmp / "judgements", QRELS.read_text().splitlines(), compress)  # no telling extension


def qrels_beir(tmp: Path, header: bool) -> Path:
    rows = [f"{q}\t{d}\t{g}" for q, docs in read_qrels().items() for d, g in docs.items()]
    return _text(tmp / "test.tsv", (["query-id\tcorpus-id\tscore"] if header else []) + rows)


def qrels_json(tmp: Path) -> Path:
    (tmp / "qrels.json").write_text(json.dumps(read_qrels(), indent=2))
    return tmp / "qrels.json"


def run_trec_sorted(tmp: Path, compress: str = "") -> Path:
    lines = [f"{q} Q0 {d} {i + 1} {s} sorted" for i, (q, d, s) in enumerate(trec_order(read_run()))]
    return _text(tmp / "sorted.run", lines, compress)


def run_msmarco(tmp: Path) -> tuple[Path, Run]:
    ranks: dict[str, int] = {}
    lines, ref = [], {}
    for q, d, _ in trec_order(read_run()):
        ranks[q] = ranks.get(q, 0) + 1
        lines.append(f"{q}\t{d}\t{ranks[q]}")
        ref.setdefault(q, {})[d] = 1.0 / ranks[q]
    return _text(tmp / "dev.small.tsv", lines), ref


def run_contract_jsonl(tmp: Path) -> Path:
    ranks: dict[str, int] = {}
    rows = []
    for q, d, s in trec_order(read_run()):
        ranks[q] = ranks.get(q, 0) + 1
        rows.append(json.dumps({"case_id": q, "rank": ranks[q], "document_id": d, "score": s}))
    return _text(tmp / "results.jsonl", rows)


def _frame(kind: str, qrels: bool) -> Any:
    if qrels:
        cols = {"query_id": [], "doc_id": [], "relevance": []}  # type: ignore[var-annotated]
        for q, docs in read_qrels().items():
            for d, g in docs.items():
                cols["query_id"].append(q), cols["doc_id"].append(d), cols["relevance"].append(g)
    else:
        cols = {"q_id": [], "doc_id": [], "score": []}
        for q, docs in read_run().items():
            for d, s in docs.items():
                cols["q_id"].append(q), cols["doc_id"].append(d), cols["score"].append(s)
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        return pd.DataFrame(cols)
    return pa.table(cols)


Case = Callable[[Path], tuple[Any, Any]]
CASES: dict[str, Case] = {
    "trec files": lambda t: (QRELS, RESULTS),
    "gzip qrels, bzip2 sorted run": lambda t: (qrels_trec(t, "gz"), run_trec_sorted(t, "bz2")),
    "bzip2 qrels, gzip run": lambda t: (qrels_trec(t, "bz2"), run_trec_sorted(t, "gz")),
    "beir with header": lambda t: (qrels_beir(t, header=True), RESULTS),
    "beir without header": lambda t: (qrels_beir(t, header=False), run_trec_sorted(t)),
    "json files": lambda t: (qrels_json(t), _json_run(t)),
    "python dicts": lambda t: (read_qrels(), read_run()),
    "pandas frames": lambda t: (_frame("pandas", True), _frame("pandas", False)),
    "arrow tables": lambda t: (_frame("arrow", True), _frame("arrow", False)),
    "contract jsonl run": lambda t: (QRELS, run_contract_jsonl(t)),
}


def _json_run(tmp: Path) -> Path:
    (tmp / "run.json").write_text(json.dumps(read_run()))
    return tmp / "run.json"


@pytest.mark.parametrize("case", list(CASES))
def test_each_format_gives_trec_eval_figures(tmp_path: Path, case: str) -> None:
    qrels, run = CASES[case](tmp_path)
    con = connect(":memory:")
    summary = load_inputs(con, LoadRequest(qrels=qrels, runs=[RunSource(run, run_id="r")]))
    assert summary.dataset is not None and summary.dataset.rows["labels"] == LABELS
    assert summary.runs[0].rows["results"] == ROWS
    assert_agrees(con, "r", read_qrels(), read_run())
    # the load records each file's sha256 (for a TREC run, hashed on another thread while DuckDB reads it)
    files = dict(con.execute("SELECT path, sha256 FROM loads WHERE NOT starts_with(sha256, 'rows-md5:')").fetchall())
    assert {p for p in (qrels, run) if isinstance(p, Path) and p.is_file()} <= {Path(p) for p in files}
    for path, sha in files.items():
        assert sha == hashlib.sha256(Path(path).read_bytes()).hexdigest(), path


def test_msmarco_run_ranks_by_its_rank_column_and_says_score_is_derived(tmp_path: Path) -> None:
    path, ref = run_msmarco(tmp_path)
    con = connect(":memory:")
    rep = load_inputs(con, LoadRequest(qrels=QRELS, runs=[path])).runs[0]
    assert rep.fmt == "msmarco" and rep.target == "dev.small" and rep.score_from_rank
    assert any("score = 1 / rank" in n for n in rep.notes())
    assert con.execute("SELECT score_from_rank FROM runs").fetchall() == [(True,)]
    assert_agrees(con, "dev.small", read_qrels(), ref)


def test_sorted_and_unsorted_trec_files_rank_alike(tmp_path: Path) -> None:
    con = connect(":memory:")
    load_inputs(con, LoadRequest(qrels=QRELS, runs=[RunSource(RESULTS, "raw"), RunSource(run_trec_sorted(tmp_path))]))
    ranks = "SELECT case_id, unit_id, rank FROM results WHERE run_id = ? ORDER BY ALL"
    assert con.execute(ranks, ["raw"]).fetchall() == con.execute(ranks, ["sorted"]).fetchall()
    # ties: trec_eval breaks them by docno descending, whatever the file order
    q = TOPICS[0]
    _text(tmp_path / "ties.trec", [f"{q} Q0 a 1 1.0 t", f"{q} Q0 c 2 1.0 t", f"{q} Q0 b 3 1.0 t", f"{q} Q0 z 4 0.5 t"])
    load_inputs(con, LoadRequest(runs=[tmp_path / "ties.trec"]))
    assert con.execute(ranks, ["t"]).fetchall() == [(q, "a", 3), (q, "b", 2), (q, "c", 1), (q, "z", 4)]


def test_grade_map_and_threshold_are_stored_and_agree(tmp_path: Path) -> None:
    gmap = {4: 3, 3: 2, 2: 1, 1: 0}
    con = connect(":memory:")
    plain = load_inputs(con, LoadRequest(qrels=QRELS, runs=[]))
    mapped = load_inputs(con, LoadRequest(qrels=QRELS, runs=[RunSource(RESULTS, "r")], grade_map="4:3,3:2,2:1,1:0"))
    assert plain.dataset is not None and mapped.dataset is not None
    assert mapped.dataset.target != plain.dataset.target  # the map is part of the version's identity
    row = con.execute("SELECT grade_map, grade_min, grade_max, relevance_threshold FROM current_dataset").fetchall()
    assert row == [('{"1": 0, "2": 1, "3": 2, "4": 3}', -1, 3, 1)]
    assert_agrees(con, "r", read_qrels(gmap), read_run())
    con2 = connect(":memory:")
    load_inputs(con2, LoadRequest(qrels=QRELS, runs=[RunSource(RESULTS, "r")], threshold=3))
    assert_agrees(con2, "r", read_qrels(), read_run(), level=3)


def test_negative_grades_are_kept_and_never_relevant(tmp_path: Path) -> None:
    qrels = _text(tmp_path / "q", ["1 0 a -2", "1 0 b -1", "1 0 c 1", "1 0 e 2", "2 0 d 0", "2 0 f 1"])
    run = _text(tmp_path / "r", ["1 Q0 a 1 3 x", "1 Q0 b 2 2 x", "1 Q0 c 3 1 x", "2 Q0 d 1 1 x"])
    con = connect(":memory:")
    load_inputs(con, LoadRequest(qrels=qrels, runs=[run]))
    assert con.execute("SELECT unit_id, grade FROM qrels ORDER BY unit_id").fetchall() == [
        ("a", -2),
        ("b", -1),
        ("c", 1),
        ("d", 0),
        ("e", 2),
        ("f", 1),
    ]
    assert con.execute("SELECT grade_min, grade_max FROM current_dataset").fetchall() == [(-2, 2)]
    ref_q = {"1": {"a": -2, "b": -1, "c": 1, "e": 2}, "2": {"d": 0, "f": 1}}
    ref_r = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"d": 1.0}}
    assert_agrees(con, "x", ref_q, ref_r)
    row = {r["case_id"]: r for r in trec_rows(con, "x")}
    # by hand: q1 retrieves a (-2), b (-1), c (1): one relevant of two (c, e); gains 0, 0, 1
    assert (row["1"]["P_5"], row["1"]["recall_5"], row["1"]["recip_rank"]) == pytest.approx((1 / 5, 1 / 2, 1 / 3))
    ideal = 2 + 1 / 1.5849625007211562  # gains 2, 1 at ranks 1, 2 (log2(3))
    assert row["1"]["ndcg_cut_5"] == pytest.approx((1 / 2) / ideal)


def test_topics_files_become_cases_and_without_topics_the_query_is_its_id(tmp_path: Path) -> None:
    q1, q2 = TOPICS[:2]
    trec = _text(tmp_path / "topics.trec", ["<top>", f"<num> Number: {q1}", "<title> International Organized Crime",
                                            "<desc> Description:", "x", "</top>", "<top>", f"<num> Number: {q2}",
                                            "<title> Poliomyelitis and Post-Polio", "</top>"])  # fmt: skip
    tsv = _text(tmp_path / "queries.tsv", [f"{q}\tquery {q}" for q in TOPICS])
    beir = _text(tmp_path / "queries.jsonl", [json.dumps({"_id": q, "text": f"t{q}"}) for q in TOPICS])
    by_id = sorted(TOPICS)  # the store orders case ids as strings
    want = {
        trec: sorted([(q1, "International Organized Crime"), (q2, "Poliomyelitis and Post-Polio")]),
        tsv: [(q, f"query {q}") for q in by_id],
        beir: [(q, f"t{q}") for q in by_id],
        None: [(q, q) for q in by_id],
    }
    for topics, cases in want.items():
        con = connect(":memory:")
        if topics is trec:  # the qrels of the other topics would name unknown cases: leave them out
            lines = [x for x in QRELS.read_text().splitlines() if x.split()[0] in (q1, q2)]
            load_inputs(con, LoadRequest(qrels=_text(tmp_path / "q12", lines), topics=topics))
        else:
            load_inputs(con, LoadRequest(qrels=QRELS, topics=topics))
        assert con.execute("SELECT case_id, query FROM cases ORDER BY case_id").fetchall() == cases


def test_run_topics_that_are_not_cases_are_ignored_once_and_counted(tmp_path: Path) -> None:
    run = _text(tmp_path / "run", [*RESULTS.read_text().splitlines(), f"999 Q0 x 1 1 {TAG}", f"998 Q0 y 1 1 {TAG}"])
    con = connect(":memory:")
    rep = load_inputs(con, LoadRequest(qrels=QRELS, runs=[run])).runs[0]
    assert (rep.ignored_topics, rep.ignored_rows, rep.rows["results"]) == (2, 2, ROWS)
    warn = [w for w in rep.warnings if w.code == "topic-not-a-case"]
    assert len(warn) == 1 and "'998', '999'" in warn[0].message
    assert con.execute("SELECT ignored_topics, ignored_rows FROM runs").fetchall() == [(2, 2)]
    assert_agrees(con, TAG, read_qrels(), read_run())


def test_tag_changes_warn_with_counts_and_split_by_tag_loads_one_run_per_tag(tmp_path: Path) -> None:
    lines = RESULTS.read_text().splitlines()
    first = lines[0].split()[0]  # the first topic's lines all come before line 30, and another's after them
    assert all(x.split()[0] != first for x in lines[30:]) and lines[29].split()[0] != first
    mixed = _text(tmp_path / "mixed", lines[:30] + [x.replace(TAG, "OTHER") for x in lines[30:]])
    con = connect(":memory:")
    rep = load_inputs(con, LoadRequest(qrels=QRELS, runs=[mixed])).runs[0]
    (w,) = [w for w in rep.warnings if w.code == "tag-changes"]
    assert f"2 tags: '{TAG}': 30 lines, 'OTHER': {ROWS - 30} lines" in w.message and "--split-by-tag" in w.message
    assert rep.target == TAG and rep.rows["results"] == ROWS
    con = connect(":memory:")
    reps = load_inputs(con, LoadRequest(qrels=QRELS, runs=[RunSource(mixed, split_by_tag=True)])).runs
    assert [(r.target, r.rows["results"]) for r in reps] == [(TAG, 30), ("OTHER", ROWS - 30)]
    only_first = {first: read_run()[first]}
    ours = {r["case_id"]: r["P_10"] for r in trec_rows(con, TAG)}
    assert ours[first] == pytest.approx(reference(read_qrels(), only_first)[first]["P_10"])


def test_extra_columns_are_one_warning_with_a_count(tmp_path: Path) -> None:
    run = _text(tmp_path / "run", [x + "\textra\tmore" for x in RESULTS.read_text().splitlines()[:7]])
    con = connect(":memory:")
    rep = load_inputs(con, LoadRequest(qrels=QRELS, runs=[run])).runs[0]
    (w,) = [w for w in rep.warnings if w.code == "extra-columns"]
    assert (w.count, w.lines) == (7, (1, 2, 3, 4, 5))
    assert rep.extra_column_lines == 7


# --- one transaction, one message per cause --------------------------------------------------------------


def _snapshot(con: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's full contents (sorted), so 'unchanged' is checked row by row."""
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()]
    return {t: sorted(con.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}


def test_a_failing_second_run_leaves_the_store_exactly_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    con = connect(db)
    load_inputs(con, LoadRequest(qrels=QRELS, runs=[RunSource(RESULTS, "before")]))
    before = _snapshot(con)
    bad = _text(tmp_path / "bad.trec", ["301 Q0 d1 1 1.5 t", "301 Q0 d2 2 oops t", "302 Q0 d3"])
    gmap = "4:1,3:1,2:1,1:1"  # a new dataset version too: it must be rolled back with the runs
    with pytest.raises(Exception) as exc:
        load_inputs(con, LoadRequest(qrels=QRELS, grade_map=gmap, runs=[RunSource(RESULTS, "good"), bad]))
    assert "nothing was loaded, the store is unchanged" in str(exc.value)
    assert _snapshot(con) == before
    con.close()
    con = connect(db)  # and on disk
    assert _snapshot(con) == before


def test_two_runs_with_one_id_are_refused_before_anything_is_stored(tmp_path: Path) -> None:
    con = connect(":memory:")
    before = _snapshot(con)
    with pytest.raises(Exception) as exc:
        load_inputs(con, LoadRequest(qrels=QRELS, runs=[RESULTS, run_trec_sorted(tmp_path), RESULTS]))
    msg = str(exc.value)
    assert f"run '{TAG}' is also the id of {RESULTS} in this load; give each run its own --run-id" in msg
    assert _snapshot(con) == before


def test_bad_lines_are_reported_once_per_cause_with_count_and_first_lines(tmp_path: Path) -> None:
    from ragtriage.contract.errors import ValidationFailed

    lines = [f"1 Q0 d{i} {i} {'x' if i % 2 else i} t" for i in range(1, 101)] + ["1 Q0 short"]
    run = _text(tmp_path / "bad.run", lines)
    con = connect(":memory:")
    with pytest.raises(ValidationFailed) as exc:
        load_inputs(con, LoadRequest(qrels=QRELS, runs=[run]))
    errs = [str(e) for e in exc.value.errors]
    assert errs == [
        f"{run}:1: score: score 'x' is not a finite number (50 lines of this kind; first: 1, 3, 5, 7, 9)",
        f"{run}:101: expected 6 columns (qid Q0 docno rank score tag), found 3",
    ]
    assert str(exc.value).startswith("51 validation error(s) of 2 kind(s); nothing was loaded, the store is unchanged")


# --- the CLI: load and validate ---------------------------------------------------------------------------


def test_cli_loads_compressed_qrels_and_runs_and_exits_2_once_per_cause(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragtriage.cli import app

    runner = CliRunner()
    db = tmp_path / "t.duckdb"
    q = qrels_trec(tmp_path, "gz")
    mm, _ = run_msmarco(tmp_path)
    args = ["load", "--db", str(db), "--qrels", str(q), "--run", str(RESULTS), "--run", str(mm), "--no-precompute"]
    res = runner.invoke(app, [*args, "--run-id", "bm25", "--run-id", "mm"])
    assert res.exit_code == 0, res.output
    assert f"run bm25 loaded: {ROWS} results rows" in res.output
    assert "note: the run file has no scores: score = 1 / rank" in res.output
    res = runner.invoke(app, [*args, "--run-id", "only-one"])
    assert res.exit_code == 2 and "--run-id was given 1 time(s) for 2 --run" in res.output
    bad = _text(tmp_path / "bad.trec", [f"301 Q0 d{i} {i} nan t" for i in range(9)])
    res = runner.invoke(app, ["load", "--db", str(db), "--run", str(bad), "--no-precompute"])
    assert res.exit_code == 2
    assert (
        res.output.count("is not a finite number") == 1 and "(9 lines of this kind; first: 1, 2, 3, 4, 5)" in res.output
    )
    assert "nothing was loaded, the store is unchanged" in res.output


@pytest.mark.slow
def test_validate_checks_trec_beir_json_qrels_runs_and_topics(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragtriage.cli import app

    runner = CliRunner()
    good = [
        ["validate", str(QRELS), "--table", "qrels"],
        ["validate", str(RESULTS)],  # 6 columns: a run
        ["validate", str(qrels_beir(tmp_path, header=False)), "--table", "qrels"],
        ["validate", str(qrels_json(tmp_path)), "--table", "qrels"],
        ["validate", str(run_trec_sorted(tmp_path, "bz2"))],
        ["validate", str(_text(tmp_path / "queries.tsv", ["1\tone", "2\ttwo"]))],
    ]
    for args in good:
        res = runner.invoke(app, args)
        assert res.exit_code == 0 and "valid" in res.output, (args, res.output)
    bad_qrels = _text(tmp_path / "my.qrels", ["1 0 a 1", "1 0 b x", "1 0 a 2"])
    res = runner.invoke(app, ["validate", str(bad_qrels)])
    assert res.exit_code == 2
    assert f"{bad_qrels}:2: grade: relevance 'x' is not an integer" in res.output
    dup = "document_id: duplicate judgement (case / unit / annotator) 1 / a / default (first at line 1)"
    assert f"error: {bad_qrels}:3: {dup}" in res.output
    bad_topics = _text(tmp_path / "topics.tsv", ["1\tone", "1\tagain", "no tab here"])
    res = runner.invoke(app, ["validate", str(bad_topics)])
    assert res.exit_code == 2
    assert f"{bad_topics}:2: id: duplicate topic id 1" in res.output
    assert f"{bad_topics}:3: expected 'id<TAB>query'" in res.output
    dup_run = _text(tmp_path / "x.run", ["1 Q0 a 1 2 t", "1 Q0 a 2 1 t"])
    res = runner.invoke(app, ["validate", str(dup_run)])
    assert res.exit_code == 0 and "appears more than once in this ranked list" in res.output


def test_compressed_files_are_found_in_dataset_and_run_folders(tmp_path: Path) -> None:
    ds = tmp_path / "scifact"
    (ds / "qrels").mkdir(parents=True)
    topics = [json.dumps({"_id": q, "text": f"t{q}"}) for q in TOPICS]
    _text(ds / "queries.jsonl.gz", topics, "gz")
    docs = {d for docs in read_qrels().values() for d in docs} | {d for docs in read_run().values() for d in docs}
    _text(ds / "corpus.jsonl.bz2", [json.dumps({"_id": d, "title": d, "text": ""}) for d in sorted(docs)], "bz2")
    beir = qrels_beir(tmp_path, header=False).read_text().splitlines()
    _text(ds / "qrels" / "test.tsv.gz", beir, "gz")
    run = tmp_path / "bm25"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "bm25", "k": 25}))
    _text(run / "bm25.trec.gz", RESULTS.read_text().splitlines(), "gz")
    con = connect(":memory:")
    summary = load_inputs(con, LoadRequest(dataset=ds, runs=[run]))
    assert summary.dataset is not None
    assert summary.dataset.rows == {"cases": len(TOPICS), "labels": LABELS, "documents": len(docs)}
    assert con.execute("SELECT query FROM cases ORDER BY case_id").fetchall() == [(f"t{q}",) for q in sorted(TOPICS)]
    assert con.execute("SELECT run_id, k FROM runs").fetchall() == [("bm25", 25)]
    assert_agrees(con, "bm25", read_qrels(), read_run())


_ids = st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(_ids, st.dictionaries(_ids, st.sampled_from([0.5, 1.0, 1.5, 2.0]), min_size=1, max_size=6),
                    min_size=1, max_size=4),
    st.randoms(use_true_random=False),
    st.booleans(),
)  # fmt: skip
@pytest.mark.slow
def test_trec_ranks_are_trec_evals_whatever_the_line_order(run: Run, rnd: Any, in_order: bool) -> None:
    """Ties (few distinct scores) and shuffled lines: the fast (file already in order) and the sorting path agree
    with trec_eval's order: score descending, docno descending."""
    rows = trec_order(run)
    if not in_order:
        rnd.shuffle(rows)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = _text(Path(tmp) / "r", [f"{q} Q0 {d} 0 {s} t" for q, d, s in rows])
        con = connect(":memory:")
        qrels = {q: {d: 1 for d in docs} for q, docs in run.items()}
        load_inputs(con, LoadRequest(qrels=qrels, runs=[path]))
        got = con.execute("SELECT case_id, unit_id FROM results ORDER BY case_id, rank").fetchall()
    assert got == [(q, d) for q, d, _ in sorted(trec_order(run), key=lambda r: r[0])]


def test_grade_map_parsing_and_a_bad_map_leaves_no_store(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragtriage.cli import app
    from ragtriage.store.grades import parse_grade_map

    assert parse_grade_map("4:3, 3:2,-2:0") == {4: 3, 3: 2, -2: 0}
    assert parse_grade_map({1: 0}) == {1: 0} and parse_grade_map(None) == {}
    with pytest.raises(ValueError, match="grade 4 is mapped twice"):
        parse_grade_map("4:3,4:2")
    db = tmp_path / "t.duckdb"
    res = CliRunner().invoke(app, ["load", "--db", str(db), "--qrels", str(QRELS), "--grade-map", "4:x"])
    assert res.exit_code == 2 and "'4:x' is not FROM:TO with integers" in res.output
    assert not db.exists()
