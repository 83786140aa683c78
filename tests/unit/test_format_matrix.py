"""Every format the README names, through every entry point, on a FILE store with the load's memory cap in force.

Entry points: ``ragtriage load`` (CLI, a file store), the store-less ``ragtriage metrics --qrels --run`` (CLI),
``ragtriage.evaluate`` (Python) and ``ragtriage validate`` (CLI). Formats: TREC, BEIR, MS MARCO, the
pytrec_eval/ranx JSON dicts, the contract's JSONL/CSV/Parquet tables, each plain, gzipped and bzip2-compressed.
The figures are checked against pytrec_eval on the small seeded collection of tests/trec_fixtures.py
(``test_byo_load``'s data).

``:memory:`` databases are never capped, so a reader that asks DuckDB for more than the cap only fails here.
"""

from __future__ import annotations

import bz2
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ragtriage
from ragtriage.cli import app
from ragtriage.contract.errors import ValidationFailed
from ragtriage.store import connect
from ragtriage.store.byo import LoadRequest, RunSource, load_inputs
from tests.unit.test_byo_load import (
    QRELS,
    ROWS,
    Qrels,
    Run,
    assert_agrees,
    qrels_beir,
    read_qrels,
    read_run,
    reference,
    run_msmarco,
    trec_order,
)

pytestmark = pytest.mark.slow  # a load per format and entry point

pytest.importorskip("pytrec_eval")
runner = CliRunner()


def _compress(path: Path, how: str) -> Path:
    if not how:
        return path
    data = path.read_bytes()
    out = path.with_name(path.name + (".gz" if how == "gz" else ".bz2"))
    out.write_bytes(gzip.compress(data) if how == "gz" else bz2.compress(data))
    path.unlink()
    return out


def _qrels_rows() -> list[dict[str, Any]]:
    return [{"case_id": q, "document_id": d, "grade": g} for q, docs in read_qrels().items() for d, g in docs.items()]


def _run_rows() -> list[dict[str, Any]]:
    ranks: dict[str, int] = {}
    rows = []
    for q, d, s in trec_order(read_run()):
        ranks[q] = ranks.get(q, 0) + 1
        rows.append({"case_id": q, "rank": ranks[q], "document_id": d, "score": s})
    return rows


def _table(path: Path, rows: list[dict[str, Any]], fmt: str) -> Path:
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        pacsv.write_csv(pa.Table.from_pylist(rows), path)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _trec_qrels(t: Path) -> Path:
    (t / "judgements").write_text(QRELS.read_text())
    return t / "judgements"


def _trec_run(t: Path) -> Path:
    lines = [f"{q} Q0 {d} {i + 1} {s} tag" for i, (q, d, s) in enumerate(trec_order(read_run()))]
    (t / "bm25.run").write_text("\n".join(lines) + "\n")
    return t / "bm25.run"


def _json(t: Path, name: str, obj: Any) -> Path:
    (t / name).write_text(json.dumps(obj, indent=1))
    return t / name


Writer = Callable[[Path], tuple[Path, Path, Run]]
FORMATS: dict[str, Writer] = {
    "trec qrels, trec run": lambda t: (_trec_qrels(t), _trec_run(t), read_run()),
    "beir qrels, msmarco run": lambda t: (qrels_beir(t, header=True), *run_msmarco(t)),
    "json qrels, json run": lambda t: (
        _json(t, "qrels.json", read_qrels()),
        _json(t, "run.json", read_run()),
        read_run(),
    ),  # noqa: E501
    "contract jsonl": lambda t: (
        _table(t / "labels.jsonl", _qrels_rows(), "jsonl"),
        _table(t / "results.jsonl", _run_rows(), "jsonl"),
        read_run(),
    ),  # fmt: skip
    "contract csv": lambda t: (
        _table(t / "labels.csv", _qrels_rows(), "csv"),
        _table(t / "results.csv", _run_rows(), "csv"),
        read_run(),
    ),  # fmt: skip
    "contract parquet": lambda t: (
        _table(t / "labels.parquet", _qrels_rows(), "parquet"),
        _table(t / "results.parquet", _run_rows(), "parquet"),
        read_run(),
    ),  # fmt: skip
}
COMPRESSIONS = ("", "gz", "bz2")
MATRIX = [(f, c) for f in FORMATS for c in COMPRESSIONS if not (c and "parquet" in f)]


def _files(tmp: Path, fmt: str, how: str) -> tuple[Path, Path, Run]:
    qrels, run, ref = FORMATS[fmt](tmp)
    return _compress(qrels, how), _compress(run, how), ref


@pytest.mark.parametrize(("fmt", "how"), MATRIX)
def test_cli_load_on_a_file_store(tmp_path: Path, fmt: str, how: str) -> None:
    qrels, run, ref = _files(tmp_path, fmt, how)
    db = tmp_path / "j.duckdb"
    res = runner.invoke(app, ["load", "--db", str(db), "--qrels", str(qrels), "--run", str(run), "--run-id", "r"])
    assert res.exit_code == 0, res.output
    con = connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM results WHERE run_id = 'r'").fetchall()[0][0] == ROWS
        assert_agrees(con, "r", read_qrels(), ref)
    finally:
        con.close()


@pytest.mark.parametrize(("fmt", "how"), MATRIX)
def test_storeless_metrics_and_evaluate_and_validate(tmp_path: Path, fmt: str, how: str) -> None:
    qrels, run, ref = _files(tmp_path, fmt, how)
    expected = reference(read_qrels(), ref)
    args = ["metrics", "--qrels", str(qrels), "--run", str(run), "-m", "P@5", "-m", "RR", "--trec-compat"]
    res = runner.invoke(app, [*args, "--per-case", "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = {r["case_id"]: r for r in json.loads(res.stdout)["rows"]}
    assert set(rows) == set(read_qrels())
    for qid, row in rows.items():
        assert row["P@5"] == pytest.approx(expected.get(qid, {}).get("P_5", 0.0), abs=1e-9), qid
        assert row["RR"] == pytest.approx(expected.get(qid, {}).get("recip_rank", 0.0), abs=1e-9), qid

    ev = ragtriage.evaluate(qrels, run, measures=["P@5", "nDCG@10"])
    ours = {r["case_id"]: r for r in ev.wide.to_pylist()}
    for qid in read_qrels():
        assert ours[qid]["P@5"] == pytest.approx(expected.get(qid, {}).get("P_5", 0.0), abs=1e-9), qid
        assert ours[qid]["nDCG@10"] == pytest.approx(expected.get(qid, {}).get("ndcg_cut_10", 0.0), abs=1e-9), qid

    for path, table in ((qrels, "qrels"), (run, "run")):
        res = runner.invoke(app, ["validate", str(path), "--table", table])
        assert res.exit_code == 0, res.output


def test_evaluate_reads_dicts_and_paths_alike_under_a_cap(tmp_path: Path) -> None:
    qrels, run = _json(tmp_path, "q.json", read_qrels()), _json(tmp_path, "r.json", read_run())
    by_path = ragtriage.evaluate(Path(qrels), Path(run), measures=["AP", "nDCG@10"]).aggregate.to_pylist()
    by_dict = ragtriage.evaluate(read_qrels(), read_run(), measures=["AP", "nDCG@10"]).aggregate.to_pylist()
    assert by_path == by_dict


# --- a reader that fails is fatal and named -----------------------------------------------------------------

BROKEN = {
    "cut short": ('{"q1": {"d1": 1,\n "d2"', ":2:", "cut short?) (column 6)"),
    "not an object": ("[1, 2, 3]", ":1:", "a JSON array at the top level"),
    "text after the object": ('{"q1": {"d1": 1}} {"q2": {}}', ":1:", "after the JSON object (column 19)"),
    "not UTF-8": (b'{"q1": {"d\xff": 1}}', ":1:", "not UTF-8"),
}


@pytest.mark.slow  # a load, a refused load and three CLI calls per case
@pytest.mark.parametrize("case", list(BROKEN))
@pytest.mark.parametrize("role", ["qrels", "run"])
def test_a_json_file_that_cannot_be_read_is_one_named_error_and_the_store_is_unchanged(
    tmp_path: Path, case: str, role: str
) -> None:
    text, where, what = BROKEN[case]
    bad = tmp_path / f"{role}.json"
    bad.write_bytes(text if isinstance(text, bytes) else text.encode())
    good_q, good_r = _trec_qrels(tmp_path), _trec_run(tmp_path)
    db = tmp_path / "j.duckdb"
    assert runner.invoke(app, ["load", "--db", str(db), "--qrels", str(good_q), "--run", str(good_r)]).exit_code == 0
    before = connect(db, read_only=True)
    counts = before.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM all_labels)").fetchall()
    before.close()
    qrels, run = (bad, good_r) if role == "qrels" else (good_q, bad)
    res = runner.invoke(app, ["load", "--db", str(db), "--qrels", str(qrels), "--run", str(run), "--run-id", "x"])
    assert res.exit_code == 2, res.output
    assert f"{bad}{where}" in res.output and what in res.output, res.output
    assert "Catalog Error" not in res.output and "Traceback" not in res.output
    after = connect(db, read_only=True)
    assert after.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM all_labels)").fetchall() == counts
    after.close()
    res = runner.invoke(app, ["metrics", "--qrels", str(qrels), "--run", str(run)])
    assert res.exit_code == 2 and f"{bad}{where}" in res.output, res.output
    res = runner.invoke(app, ["validate", str(bad), "--table", role])
    assert res.exit_code == 2 and what in res.output, res.output


def test_values_that_are_not_numbers_are_named_with_query_and_document(tmp_path: Path) -> None:
    run = _json(tmp_path, "run.json", {"q1": {"d1": 1.0, "d2": "high", "d3": True}, "q2": [1, 2]})
    con = connect(tmp_path / "j.duckdb")
    with pytest.raises(ValidationFailed) as exc:
        load_inputs(con, LoadRequest(qrels=_trec_qrels(tmp_path), runs=[RunSource(run, run_id="r")]))
    text = str(exc.value)
    assert "score '\"high\"' for query 'q1', document 'd2' is not a finite number" in text
    assert "2 lines of this kind" in text or "(2 times)" in text or ", 2" in text, text
    assert "query 'q2': expected an object {docno: score}" in text
    con.close()


# --- a large JSON run in bounded memory -------------------------------------------------------------------


def _big_run(path: Path, queries: int, depth: int) -> Qrels:
    """A ranx-shaped run: ids from a large space, real scores with ties, uneven depths; returns its qrels."""
    rnd = random.Random(7)
    qrels: Qrels = {}
    with path.open("w") as fh:
        fh.write("{")
        for i in range(queries):
            n = depth + rnd.randrange(-depth // 2, depth // 2)
            docs = {f"D{rnd.randrange(10**9):09d}": round(rnd.random(), 3) for _ in range(n)}
            fh.write(("," if i else "") + json.dumps(f"q{i}") + ":" + json.dumps(docs))
            qrels[f"q{i}"] = {d: 1 for d in list(docs)[:3]}
        fh.write("}")
    return qrels


@pytest.mark.slow
def test_a_million_row_json_run_loads_under_the_default_cap(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    qrels = _big_run(run, 10_000, 100)
    qpath = tmp_path / "qrels.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    rows = sum(1 for _ in json.loads(run.read_text()).values() for _ in _)
    assert rows >= 1_000_000 - 60_000  # uneven depths around 100 per query
    con = connect(tmp_path / "j.duckdb")  # a file store: the load caps DuckDB at LOAD_LIMIT
    summary = load_inputs(con, LoadRequest(qrels=qpath, runs=[RunSource(run, run_id="big")]))
    assert summary.runs[0].rows["results"] == rows
    ev = json.loads(run.read_text())
    q0 = sorted(sorted(ev["q0"].items(), reverse=True), key=lambda kv: -kv[1])  # trec_eval: docno descending
    got = con.execute("SELECT document_id FROM results WHERE run_id = 'big' AND case_id = 'q0' ORDER BY rank")
    assert [r[0] for r in got.fetchall()] == [d for d, _ in q0]
    con.close()
