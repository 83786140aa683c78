"""``ragtriage.evaluate(qrels, run, measures)`` for a notebook: every input shape (path, dict-of-dicts, pyarrow
Table, pandas/polars DataFrame) gives pytrec_eval's figures for the same data, per query and aggregated, on the
seeded files of tests/trec_fixtures.py (tied scores, topics without a relevant document, a run topic the qrels
lack)."""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ragtriage
from tests.trec_fixtures import Files

pytrec_eval = pytest.importorskip("pytrec_eval")
MEASURES = ["map", "Rprec", "bpref", "recip_rank", "P_10", "recall_100", "ndcg_cut_10", "num_ret", "num_rel_ret"]
REF = {"map", "Rprec", "bpref", "recip_rank", "P.10", "recall.100", "ndcg_cut.10", "num_ret", "num_rel_ret"}


def _dicts(files: Files) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """The 0/1 qrels and the tab-separated, space-padded run, read by pytrec_eval's own parsers."""
    with gzip.open(files("qrels.gz"), "rt") as f:
        qrels = pytrec_eval.parse_qrel(f)
    with gzip.open(files("run.gz"), "rt") as f:
        run = pytrec_eval.parse_run(f)
    return qrels, run


def _table(d: dict[str, dict[str, Any]], value: str) -> pa.Table:
    rows = [(q, doc, v) for q, docs in d.items() for doc, v in docs.items()]
    return pa.table({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows], value: [r[2] for r in rows]})


def _inputs(kind: str, files: Files) -> tuple[Any, Any]:
    qrels, run = _dicts(files)
    if kind == "path":
        return str(files("qrels.gz")), files("run.gz")
    if kind == "dict":
        return qrels, run
    tq, tr = _table(qrels, "relevance"), _table(run, "score")
    if kind == "arrow":
        return tq, tr
    if kind == "pandas":
        pytest.importorskip("pandas")
        return tq.to_pandas(), tr.to_pandas()
    polars = pytest.importorskip("polars")
    return polars.from_arrow(tq), polars.from_arrow(tr)


@pytest.mark.parametrize("kind", ["path", "dict", "arrow", "pandas", "polars"])
def test_every_input_shape_gives_trec_eval(kind: str, trec_files: Files) -> None:
    qrels, run = _dicts(trec_files)
    ref = pytrec_eval.RelevanceEvaluator(qrels, REF).evaluate(run)
    result = ragtriage.evaluate(*_inputs(kind, trec_files), measures=MEASURES)
    wide = {r["case_id"]: r for r in result.wide.to_pylist()}
    assert set(wide) == set(qrels)
    for row in result.aggregate.to_pylist():
        name = row["trec"]
        values = [ref[q][name] for q in sorted(qrels)]
        for q, expected in zip(sorted(qrels), values, strict=True):
            assert wide[q][row["measure"]] == pytest.approx(expected, abs=1e-9), (kind, q, name)
        total = np.sum(values) if name.startswith("num_") else np.mean(values)
        assert row["value"] == pytest.approx(total, abs=1e-9), (kind, name)
    long = result.per_query.to_pylist()
    assert len(long) == len(MEASURES) * len(qrels) and result.context["mode"] == "default"


def test_ir_measures_names_and_default_mode(trec_files: Files) -> None:
    qrels, run = _dicts(trec_files)
    rel2 = {q: {d: g * 2 for d, g in docs.items()} for q, docs in qrels.items()}  # grades 0/2
    res = ragtriage.evaluate(rel2, run, measures=["P(rel=2)@10", "P@10"], threshold=2, trec_compat=False)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P.10"}).evaluate(run)
    values = {r["measure"]: r["value"] for r in res.aggregate.to_pylist()}
    assert values["P(rel=2)@10"] == pytest.approx(np.mean([ref[q]["P_10"] for q in ref]), abs=1e-12)
    assert values["P@10"] == values["P(rel=2)@10"]  # rel left out: the threshold given
    assert res.aggregate.to_pylist()[1]["parameters"] == "cutoff=10, rel=2 (dataset threshold)"


def test_bad_measure_names_the_part(trec_files: Files) -> None:
    qrels, run = _dicts(trec_files)
    with pytest.raises(ValueError, match="Bpref takes no cutoff"):
        ragtriage.evaluate(qrels, run, measures=["Bpref@10"])
