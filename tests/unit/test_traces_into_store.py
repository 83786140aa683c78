"""``load --db X --traces F --run-id R`` into a store that already holds its dataset: the spans are matched to the
store's cases and give the figures a load of the dataset with the traces gives; ``--cases in-run`` takes the traced
cases only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.metrics.context import using
from ragtriage.metrics.measure_eval import evaluate_run
from ragtriage.store import connect
from tests.factory import make_store
from tests.trace_fixtures import Retrieval, write_otlp

runner = CliRunner()
MEASURES = ["P@3", "R@3", "nDCG@3", "RR", "AP"]
CASES = [{"id": c, "query": f"question {c}", "split": "dev"} for c in ("a", "b", "c", "d")]
LABELS = [
    {"case_id": "a", "document_id": "D1", "chunk_id": "D1#1", "grade": 3},
    {"case_id": "a", "document_id": "D2", "chunk_id": "D2#1", "grade": 1},
    {"case_id": "b", "document_id": "D2", "chunk_id": "D2#1", "grade": 2},
    {"case_id": "c", "document_id": "D3", "chunk_id": "D3#1", "grade": 2},
    {"case_id": "d", "document_id": "D1", "chunk_id": "D1#1", "grade": 2},
]
DOCS = [{"document_id": d, "chunk_id": f"{d}#1", "doc_type": "x"} for d in ("D1", "D2", "D3", "D4")]
SPANS = [  # a and b traced, c and d not; one query that is no case
    Retrieval("question a", [("D4#1", 0.9, "t"), ("D1#1", 0.8, "t"), ("D2#1", 0.7, "t")], 1),
    Retrieval("question b", [("D2#1", 0.9, "t")], 2),
    Retrieval("something else", [("D1#1", 0.9, "t")], 3),
]


def _invoke(*args: str | Path) -> str:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.output


def _figures(db: Path, cases: str = "all") -> dict[str, Any]:
    con = connect(db, read_only=True)
    try:
        with using(cases=cases):
            res = evaluate_run(con, "prod", MEASURES)
        return {
            "per_case": sorted(res.per_case.to_pylist(), key=lambda r: (r["case_id"], r["measure"])),
            "mean": {r["measure"]: r["value"] for r in res.aggregate.to_pylist()},
            "cases": res.context["cases"],
        }
    finally:
        con.close()


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Path, Path]:
    traces = write_otlp(tmp_path / "spans.json", SPANS)
    loaded = tmp_path / "loaded.duckdb"
    make_store(tmp_path, cases=CASES, labels=LABELS, documents=DOCS, db="loaded.duckdb").close()
    out = _invoke("load", "--db", loaded, "--traces", traces, "--run-id", "prod", "--no-precompute")
    assert "run prod loaded" in out, out
    fresh = tmp_path / "fresh.duckdb"
    _invoke("load", "--db", fresh, "--dataset", tmp_path / "dataset", "--traces", traces, "--run-id", "prod",
            "--no-precompute")  # fmt: skip
    return loaded, fresh


def test_traces_into_a_loaded_store_give_a_fresh_loads_figures(stores: tuple[Path, Path]) -> None:
    loaded, fresh = _figures(stores[0]), _figures(stores[1])
    assert loaded["per_case"] and loaded["per_case"] == fresh["per_case"]
    assert loaded["mean"] == fresh["mean"] and loaded["cases"] == fresh["cases"] == 4
    # by hand: a lists D4 (unjudged), D1 (3), D2 (1): P@3 1/3, RR 1/2; b lists D2 (2): P@3 1/3, RR 1; c, d: 0
    assert loaded["mean"]["P@3"] == pytest.approx((1 / 3 + 1 / 3) / 4, abs=1e-12)
    assert loaded["mean"]["RR"] == pytest.approx((1 / 2 + 1) / 4, abs=1e-12)


def test_in_run_counts_the_traced_cases_only(stores: tuple[Path, Path]) -> None:
    traced = _figures(stores[0], "in-run")
    assert traced["cases"] == 2 and {r["case_id"] for r in traced["per_case"]} == {"a", "b"}
    assert traced["mean"]["RR"] == pytest.approx((1 / 2 + 1) / 2, abs=1e-12)
    out = _invoke("metrics", "--db", stores[0], "--run", "prod", "--k", "3", "--cases", "in-run")
    assert "population in-run · cases 2" in out, out


def test_nothing_to_load_lists_every_input(tmp_path: Path) -> None:
    res = runner.invoke(app, ["load", "--db", str(tmp_path / "x.duckdb")])
    assert res.exit_code == 2
    for option in ("--dataset", "--qrels", "--topics", "--run", "--run-id", "--traces"):
        assert option in res.output, (option, res.output)


def test_traces_into_a_store_without_a_dataset_are_refused(tmp_path: Path) -> None:
    traces = write_otlp(tmp_path / "spans.json", SPANS)
    res = runner.invoke(app, ["load", "--db", str(tmp_path / "x.duckdb"), "--traces", str(traces), "--run-id", "p"])
    assert res.exit_code == 2 and "dataset" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "x.duckdb").exists()
