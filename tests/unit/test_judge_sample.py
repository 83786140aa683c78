"""`ragtriage judge` on the bundled sample (537 people's labels) against a real chat-completions server on
127.0.0.1: calibration equal to scikit-learn, a fill stored as a new version with provenance and the people's
labels byte-identical, `--labels with-judge` changing exactly the filled units, the cache, and the ranking."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.judge import calibration_pairs, measure_changes, ranking_agreement
from ragtriage.judge.pairs import pool_pairs, quotas
from ragtriage.metrics.context import using_labels
from ragtriage.metrics.per_case import per_case
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect, load_dataset, load_run
from tests.judge_server import ChatServer, chat_server

pytestmark = pytest.mark.slow  # the sample loaded and a fill of hundreds of requests

RUNS = ("bm25", "dense", "hybrid-rerank")


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("judge") / "sample.duckdb"
    con = connect(path)
    load_dataset(con, sample_runs_path() / "dataset")
    for run in RUNS:
        load_run(con, sample_runs_path() / "runs" / run)
    con.close()
    return path


@pytest.fixture
def db(sample_file: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store.duckdb"
    shutil.copy(sample_file, copy)
    return copy


def _h(*parts: str) -> int:
    return int(hashlib.md5("\0".join(parts).encode()).hexdigest(), 16)


def people(db: Path) -> dict[tuple[str, str], int]:
    """(query, text) -> the people's grade of every labelled unit with text (what calibration may draw)."""
    con = connect(db, read_only=True)
    try:
        t = calibration_pairs(con, 10_000)
    finally:
        con.close()
    rows = zip(t["query"].to_pylist(), t["text"].to_pylist(), t["human_grade"].to_pylist(), strict=True)
    return {(q, x): g for q, x, g in rows}


def judge_like_people(known: dict[tuple[str, str], int]):  # type: ignore[no-untyped-def]
    """A judge that agrees with people most of the time, over-rates one pair in five, and grades unknown pairs
    by a hash."""

    def script(query: str, passage: str) -> str:
        g = known.get((query, passage))
        if g is None:
            return f"grade: {_h(query, passage) % 4}"
        if _h(query, passage) % 5 == 0:
            g = min(3, g + 1)
        return f"grade: {g}"

    return script


def run_cli(db: Path, server: ChatServer, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    res = runner.invoke(
        app, ["judge", "--db", str(db), "--endpoint", server.url, "--model", "m1", *args], catch_exceptions=False
    )
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def server(db: Path) -> Iterator[ChatServer]:
    with chat_server(judge_like_people(people(db))) as srv:
        yield srv


def _session_pairs(db: Path, purpose: str) -> list[tuple[str, str, int, int | None]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            """SELECT p.case_id, p.unit_id, p.human_grade, a.grade FROM judge_pairs p
               JOIN judge_sessions s USING (session_id) LEFT JOIN judge_answers a USING (key)
               WHERE s.purpose = ? ORDER BY p.case_id, p.unit_id""",
            [purpose],
        ).fetchall()
    finally:
        con.close()


def test_calibrate_200_equals_sklearn(db: Path, server: ChatServer) -> None:
    code, out, err = run_cli(db, server, "--calibrate", "200", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    pairs = _session_pairs(db, "calibrate")
    assert len(pairs) == 200
    human = np.array([p[2] for p in pairs])
    judge = np.array([p[3] for p in pairs])
    # stratified: the sample's grades are as even as the labels allow
    counts = {g: int((human == g).sum()) for g in range(4)}
    con = connect(db, read_only=True)
    available = dict(con.execute("SELECT grade, count(*) FROM qrels GROUP BY grade").fetchall())
    con.close()
    assert (
        sum(counts.values()) == 200
        and max(counts.values()) - min(counts.values()) <= 1
        or counts == quotas({int(g): int(n) for g, n in available.items()}, 200)
    )
    figures = {r["statistic"]: r for r in report["rows"]}
    kappa = figures["Cohen's kappa (4 grades)"]["value"]
    assert kappa == pytest.approx(cohen_kappa_score(human, judge, labels=[0, 1, 2, 3]), abs=1e-12)
    weighted = figures["quadratic-weighted kappa"]["value"]
    assert weighted == pytest.approx(cohen_kappa_score(human, judge, labels=[0, 1, 2, 3], weights="quadratic"))
    binary = figures["kappa at grade >= 2 (binary)"]["value"]
    assert binary == pytest.approx(cohen_kappa_score(human >= 2, judge >= 2))
    matrix = [[row[str(g)] for g in range(4)] for row in report["confusion matrix (rows: people, columns: judge)"]]
    assert matrix == sk_confusion(human, judge, labels=[0, 1, 2, 3]).tolist()
    for fig in figures.values():
        assert fig["ci_low"] <= fig["value"] <= fig["ci_high"]
    majority = figures[next(n for n in figures if n.startswith("majority-class baseline"))]
    assert majority["value"] == pytest.approx(max(counts.values()) / 200)
    per_grade = {r["grade"]: r for r in report["per grade"]}
    from sklearn.metrics import precision_score, recall_score

    prec = precision_score(human, judge, labels=[0, 1, 2, 3], average=None, zero_division=np.nan)
    rec = recall_score(human, judge, labels=[0, 1, 2, 3], average=None)
    for g in range(4):
        assert per_grade[g]["precision"] == pytest.approx(prec[g])
        assert per_grade[g]["recall"] == pytest.approx(rec[g])
        assert per_grade[g]["judge_share"] == pytest.approx((judge == g).mean())
    # the over-rating judge puts more mass on grade 3 than the people do
    assert per_grade[3]["judge_share"] > per_grade[3]["human_share"]
    assert report["context"]["graded"] == 200 and report["context"]["unparsed"] == 0


def _labels_snapshot(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        first = con.execute("SELECT dataset_version FROM datasets WHERE parent_version IS NULL").fetchone()
        assert first is not None
        rows = con.execute(
            "SELECT * EXCLUDE (dataset_version) FROM all_labels WHERE dataset_version = ? ORDER BY ALL", [first[0]]
        ).fetchall()
        qrels = con.execute("SELECT * FROM qrels ORDER BY ALL").fetchall()
        return rows, qrels, str(first[0])
    finally:
        con.close()


def test_fill_stores_a_version_with_provenance_and_keeps_people_labels(db: Path, server: ChatServer) -> None:
    before_rows, before_qrels, root = _labels_snapshot(db)
    assert len(before_rows) == 537
    con = connect(db, read_only=True)
    pool = pool_pairs(con, ["bm25", "dense"], 10)
    con.close()
    assert run_cli(db, server, "--calibrate", "200")[0] == 0
    code, out, err = run_cli(db, server, "--fill", "--runs", "bm25,dense", "--depth", "10", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    after_rows, after_qrels, _ = _labels_snapshot(db)
    assert after_rows == before_rows  # the people's version, untouched
    assert after_qrels == before_qrels  # and the store's qrels stay theirs
    con = duckdb.connect(str(db), read_only=True)
    try:
        current, parent = con.execute("SELECT dataset_version, parent_version FROM current_dataset").fetchone()  # type: ignore[misc]
        assert parent == root and current != root
        people_now = con.execute(
            "SELECT * EXCLUDE (dataset_version) FROM all_labels WHERE dataset_version = ? "
            "AND NOT starts_with(annotator, 'judge:') ORDER BY ALL",
            [current],
        ).fetchall()
        assert people_now == before_rows  # copied into the child byte for byte
        judged = con.execute(
            """SELECT l.case_id, l.unit_id, l.grade, l.note, a.grade, a.raw_answer, a.prompt_sha256, a.temperature
               FROM all_labels l JOIN judge_answers a ON l.note LIKE '% answer ' || a.key
               WHERE l.dataset_version = ? AND l.annotator = 'judge:m1'""",
            [current],
        ).fetchall()
        n_judge = con.execute(
            "SELECT count(*) FROM all_labels WHERE dataset_version = ? AND annotator = 'judge:m1'", [current]
        ).fetchone()
        still = pool_pairs(con, ["bm25", "dense"], 10)
    finally:
        con.close()
    assert n_judge is not None and len(judged) == n_judge[0] > 0
    for _case, _unit, grade, note, parsed, raw, sha, temperature in judged:
        assert grade == parsed and raw == f"grade: {grade}" and temperature == 0.0
        assert f"sha256:{sha}" in note
    assert report["context"]["filled units (no person's label)"] == pool.num_rows
    assert still.num_rows == pool.num_rows  # a unit only the judge graded still waits for a person
    assert report["context"]["judge labels"] == len(judged)


def test_with_judge_differs_exactly_on_the_filled_units(db: Path, server: ChatServer) -> None:
    run_cli(db, server, "--calibrate", "200")
    assert run_cli(db, server, "--fill", "--runs", "bm25", "--depth", "5")[0] == 0
    con = connect(db, read_only=True)
    try:
        human = per_case(con, "dense", (5,)).to_pylist()
        with using_labels("with-judge"):
            judged = per_case(con, "dense", (5,)).to_pylist()
        filled = con.execute(
            """SELECT case_id, unit_id FROM labels l WHERE starts_with(annotator, 'judge:')
               AND NOT EXISTS (SELECT 1 FROM qrels q WHERE q.case_id = l.case_id AND q.unit_id = l.unit_id)"""
        ).fetchall()
        top5 = con.execute(
            """SELECT case_id, unit_id FROM results WHERE run_id = 'dense' AND stage = 'final'
               QUALIFY row_number() OVER (PARTITION BY case_id, unit_id ORDER BY rank) = 1"""
        ).fetchall()
        ranks = con.execute(
            """SELECT case_id, unit_id, min(rank) AS r FROM results WHERE run_id = 'dense' AND stage = 'final'
               GROUP BY ALL"""
        ).fetchall()
    finally:
        con.close()
    order: dict[str, list[tuple[int, str]]] = {}
    for case, unit, r in ranks:
        order.setdefault(case, []).append((r, unit))
    top = {(c, u) for c, units in order.items() for _, u in sorted(units)[:5]}
    assert len(top5) == len(ranks)
    holes = set(filled)
    with_hole = {c for c, _ in holes}
    in_top = {c for c, u in holes if (c, u) in top}
    assert [r["case_id"] for r in human] == [r["case_id"] for r in judged]  # the same population
    changed = {h["case_id"] for h, j in zip(human, judged, strict=True) if h != j}
    judged_at_5 = {h["case_id"] for h, j in zip(human, judged, strict=True) if h["Judged@5"] != j["Judged@5"]}
    assert in_top and judged_at_5 == {c for c in in_top if c in {r["case_id"] for r in human}}
    assert judged_at_5 <= changed
    assert changed <= with_hole  # a case without a filled unit keeps every figure
    for h, j in zip(human, judged, strict=True):
        n_top = sum(1 for c, u in holes if c == h["case_id"] and (c, u) in top)
        returned = min(5, len(order.get(h["case_id"], [])))
        if returned:
            assert j["Judged@5"] == pytest.approx(h["Judged@5"] + n_top / returned)


def test_rerun_asks_nothing_and_the_ranking_is_kendall_tau(db: Path, server: ChatServer) -> None:
    run_cli(db, server, "--calibrate", "200")
    asked = len(server.requests)
    assert run_cli(db, server, "--calibrate", "200")[0] == 0
    assert len(server.requests) == asked  # the cache answered every pair
    assert run_cli(db, server, "--fill", "--runs", "bm25,dense,hybrid-rerank", "--depth", "3")[0] == 0
    asked = len(server.requests)
    code, _, err = run_cli(db, server, "--fill", "--runs", "bm25,dense,hybrid-rerank", "--depth", "3")
    assert code == 0 and len(server.requests) == asked
    assert " 0 to ask" in err.replace("\n", " ")
    con = connect(db, read_only=True)
    try:
        changes = measure_changes(con, k=10)
        ranking = ranking_agreement(changes).to_pylist()
    finally:
        con.close()
    for row in ranking:
        sub = [r for r in changes.to_pylist() if r["measure"] == row["measure"]]
        expected = kendalltau([r["human"] for r in sub], [r["with_judge"] for r in sub]).statistic
        assert row["runs"] == 3 and row["kendall_tau"] == pytest.approx(expected)
    judged = {r["run"]: r for r in changes.to_pylist() if r["measure"] == "Judged@10"}
    assert set(judged) == set(RUNS)
    assert all(r["with_judge"] > r["human"] for r in judged.values())


def test_headers_say_which_labels(db: Path, server: ChatServer) -> None:
    run_cli(db, server, "--calibrate", "200")
    run_cli(db, server, "--fill", "--runs", "bm25", "--depth", "3")
    runner = CliRunner()
    plain = runner.invoke(app, ["metrics", "--db", str(db), "--run", "bm25", "--k", "10"])
    assert "labels human only (" in plain.stdout and "judged label(s) stored, not used" in plain.stdout
    with_judge = runner.invoke(
        app, ["metrics", "--db", str(db), "--run", "bm25", "--k", "10", "--labels", "with-judge"]
    )
    assert "labels human + judged:" in with_judge.stdout
    cmp = runner.invoke(
        app, ["compare", "--db", str(db), "--run", "dense", "--baseline", "bm25", "--labels", "with-judge"]
    )
    assert cmp.exit_code == 0 and "labels human + judged:" in cmp.stdout
    gate = runner.invoke(
        app,
        [
            "gate",
            "--db",
            str(db),
            "--gate",
            str(sample_runs_path() / "gate.toml"),
            "--run",
            "dense",
            "--baseline",
            "bm25",
            "--no-record",
        ],
    )
    assert gate.stdout.startswith("labels: human only (")
    agree = runner.invoke(app, ["agreement", "--db", str(db), "--json"])
    assert agree.exit_code == 0
    con = connect(db, read_only=True)
    try:
        from ragtriage.annotate import label_pairs

        pairs = label_pairs(con).to_pylist()
    finally:
        con.close()
    assert any("judge:m1" in (p["annotator_a"], p["annotator_b"]) for p in pairs)  # the judge is an annotator
