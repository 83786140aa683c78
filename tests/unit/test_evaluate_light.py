"""The store-less evaluation of clean TREC files (store/load_memory.py) gives what loading the same files into a
store gives: trec_eval's output line for line (built from pytrec_eval on the seeded files of tests/trec_fixtures.py),
the same figures and notes in both modes, and the same refusals (any file the light path does not take goes the
full way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ragtriage
from ragtriage.app import evaluate as evaluation
from ragtriage.cli import app
from ragtriage.contract.errors import ValidationFailed
from ragtriage.store import load_memory
from tests.trec_fixtures import RUN_ONLY, TREC_MEASURES, Files, read_qrels, read_run, trec_eval_lines

runner = CliRunner()
MEASURES = ["map", "Rprec", "bpref", "recip_rank", "P_5", "recall_100", "ndcg_cut_10", "num_ret", "num_rel_ret"]
NAMED = ["nDCG@10", "P@5", "R@100", "RR@10", "AP", "Judged@10", "Success@5", "NumRet", "NumRel"]


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per evaluation, whether the light path took the inputs."""
    seen: list[bool] = []
    real = load_memory.light_store

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(evaluation, "light_store", spy)
    return seen


def _full_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluation, "light_store", lambda *a, **k: None)


@pytest.mark.parametrize(
    ("qrels", "results", "threshold"),
    [("qrels.txt", "run.txt", None), ("qrels.txt", "trunc.txt", None), ("graded.txt", "run.txt", 2)],
)
def test_same_lines_as_trec_eval(
    trec_files: Files, taken: list[bool], qrels: str, results: str, threshold: int | None
) -> None:
    """The single-spaced files (as most tools write TREC): ``-q``, ``-q -c`` and ``-q -l2`` as trec_eval."""
    q, r = trec_files(qrels), trec_files(results)
    args = ["metrics", "--qrels", str(q), "--run", str(r), "--trec-compat", "--format", "trec", "--per-case"]
    args += ["--threshold", str(threshold)] if threshold else []
    for name in TREC_MEASURES:
        args += ["-m", name]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == trec_eval_lines(read_qrels(q), read_run(r), TREC_MEASURES, threshold or 1)
    # the truncated run has lines with columns after the tag: the full load says so in a note
    assert taken == [results != "trunc.txt"]


def _figures(result: ragtriage.Evaluation) -> tuple[Any, ...]:
    return result.aggregate.to_pylist(), result.wide.to_pylist(), result.context, result.notes


def _rounded(value: Any) -> Any:
    """``value`` with every float to 12 significant digits: a DCG is a sum over a hash join's rows, whose order
    (and so the last bit of the sum) two reads of the same lists need not share."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_rounded(v) for v in value)
    return value


#: every measure with a cutoff: the lists are cut by a top-n aggregate (``ranking.labelled_positions_sql``)
CUT_ONLY = ["nDCG@10", "P@5", "R@100", "RR@10", "AP@20", "Judged@10", "Success@5", "ndcg_cut_5", "P_30"]


@pytest.mark.parametrize("measures", [[*MEASURES, *NAMED], CUT_ONLY], ids=["whole-lists", "cut-lists"])
@pytest.mark.parametrize("trec_compat", [True, False])
def test_light_and_full_agree(
    tmp_path: Path,
    trec_files: Files,
    taken: list[bool],
    monkeypatch: pytest.MonkeyPatch,
    trec_compat: bool,
    measures: list[str],
) -> None:
    q = trec_files("graded.txt")
    r = tmp_path / "run.txt"
    # a second run topic that is not a query of the qrels, and a second tag: both are notes of the report
    r.write_text(trec_files("run.txt").read_text() + "999 Q0 doc-x 1 3.5 OTHER\n999 Q0 doc-y 2 2.5 OTHER\n")
    ignored = 2 + sum(1 for line in trec_files.full.lines if line[0] == RUN_ONLY)
    kwargs: dict[str, Any] = {"trec_compat": trec_compat, "grade_map": "4:3,-1:0", "threshold": 2}
    light = _figures(ragtriage.evaluate(q, r, measures, **kwargs))
    assert taken == [True]
    _full_only(monkeypatch)
    assert _rounded(light) == _rounded(_figures(ragtriage.evaluate(q, r, measures, **kwargs)))
    assert any(f"2 run topic(s) not in the dataset were ignored ({ignored} rows)" in n for n in light[3])
    assert any("2 run tags" in n for n in light[3])


@pytest.mark.parametrize("trec_compat", [True, False])
def test_a_repeated_docno_counts_once_as_loaded(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch, trec_compat: bool
) -> None:
    """A docno twice in a list: the light path takes the run and counts the occurrence ranked first (the higher
    score, wherever its line is), as the measures of the loaded run do; a repeat in an ignored topic counts among
    the ignored rows."""
    q = tmp_path / "qrels.txt"
    q.write_text("1 0 a 1\n1 0 b 1\n2 0 c 1\n2 0 e 0\n")
    r = tmp_path / "run.txt"
    r.write_text(
        "1 Q0 a 1 3.0 t\n1 Q0 x 2 2.0 t\n1 Q0 a 3 1.0 t\n1 Q0 b 4 0.5 t\n"
        "2 Q0 e 1 2.0 t\n2 Q0 c 2 1.0 t\n2 Q0 c 3 3.0 t\n9 Q0 z 1 1.0 t\n9 Q0 z 2 1.0 t\n"
    )
    measures = ["NumRet", "AP", "P@1", "P@3", "nDCG@3", "RR", "Bpref"]
    res = ragtriage.evaluate(q, r, measures, trec_compat=trec_compat)
    assert taken == [True]
    # query 1's list is a, x, b (AP (1/1 + 2/3) / 2); query 2's c (3.0, its later line), e: c first (AP 1)
    values = {row["measure"]: row["value"] for row in res.aggregate.to_pylist()}
    assert values["NumRet"] == 5.0
    assert values["AP"] == pytest.approx((1 + 2 / 3) / 4 + 1 / 2)
    assert values["P@1"] == 1.0
    assert res.notes[-1].startswith("1 run topic(s) not in the dataset were ignored (2 rows)")
    _full_only(monkeypatch)
    assert _rounded(_figures(res)) == _rounded(_figures(ragtriage.evaluate(q, r, measures, trec_compat=trec_compat)))


def test_refusals_are_the_full_loads(tmp_path: Path, taken: list[bool]) -> None:
    """A grade beyond the store's INTEGER range passes the reader and is refused by the label rules, a bad score by
    the reader: the light path hands the files to the full load, whose message names the file, line and field."""
    q, ok, r, bad = (tmp_path / n for n in ("qrels.txt", "ok.txt", "run.txt", "bad.txt"))
    q.write_text("1 0 a 1\n1 0 b 99999999999\n")
    ok.write_text("1 0 a 1\n")
    r.write_text("1 Q0 a 1 3.0 t\n")
    bad.write_text("1 Q0 a 1 3.0 t\n1 Q0 b 2 oops t\n")
    found = []
    for qrels, run in ((q, r), (ok, bad)):
        with pytest.raises(ValidationFailed) as exc:
            ragtriage.evaluate(qrels, run, ["P@1"])
        f = exc.value.errors[0]
        found.append((Path(f.file).name, f.line, f.field, f.code))
    assert found == [("qrels.txt", 2, "grade", "out-of-range"), ("bad.txt", 2, "score", "bad-score")]
    assert taken == [False, False]


def test_a_pair_judged_twice_is_refused_as_the_load_refuses_it(tmp_path: Path, taken: list[bool]) -> None:
    """Repeated qrels lines of one (query, document) are refused by the load and by trec_eval; the one-off must
    not pool them into one grade (it did: max of the two), whether the lines agree or not."""
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text("q1 0 d1 2\nq1 0 d1 2\nq1 0 d2 1\nq2 0 d1 1\nq2 0 d1 3\n")
    r.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d1 1 1.0 t\n")
    with pytest.raises(ValidationFailed) as exc:
        ragtriage.evaluate(q, r, ["P@1"])
    f = exc.value.errors[0]
    assert (Path(f.file).name, f.line, f.field) == ("qrels.txt", 2, "document_id")
    assert "duplicate judgement" in f.message and taken == [False]
    res = runner.invoke(app, ["metrics", "--qrels", str(q), "--run", str(r), "--measure", "P@1"])
    assert res.exit_code == 2 and "qrels.txt:2: document_id: duplicate judgement" in res.output


@pytest.mark.parametrize("extra", [["--by", "split"], ["--view", "judged"]])
def test_reports_other_than_measures_load_the_full_way(trec_files: Files, taken: list[bool], extra: list[str]) -> None:
    """Slices and the judged view read tables the light path does not make (ranks, labels, documents)."""
    q, r = trec_files("qrels.txt"), trec_files("run.txt")
    res = runner.invoke(app, ["metrics", "--qrels", str(q), "--run", str(r), "--k", "10", "--format", "json", *extra])
    assert res.exit_code == 0, res.output
    assert taken == []
    named = runner.invoke(app, ["metrics", "--qrels", str(q), "--run", str(r), "--k", "10", "--format", "json"])
    assert named.exit_code == 0 and taken == [True]


@pytest.mark.slow
def test_beir_dict_and_frame_qrels_take_the_light_path(
    tmp_path: Path, trec_files: Files, taken: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Qrels in any format the load reads (here BEIR TSV with its header, a dict, an Arrow table) with a TREC run."""
    import pyarrow as pa

    rows = [line.split() for line in trec_files("qrels.txt").read_text().splitlines()]
    beir = tmp_path / "test.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, _, d, g in rows))
    as_dict: dict[str, dict[str, int]] = {}
    for q, _, d, g in rows:
        as_dict.setdefault(q, {})[d] = int(g)
    frame = pa.table(
        {"query_id": [r[0] for r in rows], "doc_id": [r[2] for r in rows], "relevance": [int(r[3]) for r in rows]}
    )
    r = trec_files("run.txt")
    light = [_figures(ragtriage.evaluate(q, r, MEASURES)) for q in (beir, as_dict, frame)]
    assert taken == [True, True, True]
    _full_only(monkeypatch)
    assert light == [_figures(ragtriage.evaluate(q, r, MEASURES)) for q in (beir, as_dict, frame)]


def test_labels_of_several_annotators_are_pooled_on_the_light_path(
    tmp_path: Path, taken: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Qrels of one annotator skip the pooling query (each pair is judged once); two annotators of one pair are
    pooled as the store pools them: d1 judged 0 and 3 has the median 1, not relevant at rel=2."""
    import pyarrow as pa

    frame = pa.table(
        {
            "query_id": ["q1", "q1", "q1"],
            "doc_id": ["d1", "d1", "d2"],
            "relevance": [0, 3, 1],
            "annotator": ["a", "b", "a"],
        }
    )
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.8 t\n")
    measures = ["P(rel=2)@1", "NumRel", "nDCG@2"]
    light = ragtriage.evaluate(frame, run, measures)
    assert taken == [True]
    values = dict(zip(light.aggregate["measure"].to_pylist(), light.aggregate["value"].to_pylist(), strict=True))
    assert values["P(rel=2)@1"] == 0.0 and values["NumRel"] == 2
    _full_only(monkeypatch)
    assert _figures(light) == _figures(ragtriage.evaluate(frame, run, measures))
    one = tmp_path / "qrels.txt"
    one.write_text("q1 0 d1 3\nq1 0 d2 1\n")
    con, _, _ = load_memory.light_store(one, run)
    try:
        assert con.execute("SELECT unit_id, grade, n_annotators FROM qrels ORDER BY 1").fetchall() == [
            ("d1", 3, 1),
            ("d2", 1, 1),
        ]
    finally:
        con.close()
