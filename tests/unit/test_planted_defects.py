"""The classifier on a planted-defect set built from the sample (scripts/plant_defects.py): accuracy per planted
category at least 0.95, no failure on a clean case, and with no manifest no failure is absent-from-corpus."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.classify import classify_run
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect, load_dataset, load_run

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "plant_defects.py"
CATEGORY_ORDER = ("dataset", "ingestion", "ranking", "security", "undetermined", "none")


def _plant() -> Any:
    spec = importlib.util.spec_from_file_location("plant_defects", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def planted_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("planted")
    return out, _plant().build(out, sample_runs_path() / "dataset", seed=17, per_kind=8)


def _load(root: Path, db: Path, *, manifest: bool = True) -> duckdb.DuckDBPyConnection:
    dataset = root / "dataset"
    if not manifest:
        bare = db.parent / "bare"
        bare.mkdir()
        for name in ("dataset.json", "cases.jsonl", "labels.jsonl"):
            (bare / name).write_bytes((dataset / name).read_bytes())
        dataset = bare
    con = connect(db)
    load_dataset(con, dataset)
    for run in ("oracle", "unfiltered"):
        load_run(con, root / "runs" / run)
    return con


def _assigned(rows: list[dict[str, Any]]) -> dict[str, str]:
    """case → the category of its failures (', '-joined when a case has failures of several categories)."""
    cats: dict[str, set[str]] = {}
    for r in rows:
        cats.setdefault(r["case_id"], set()).add(r["category"])
    return {c: ", ".join(sorted(v)) for c, v in cats.items()}


@pytest.mark.slow
def test_build_is_deterministic(planted_set: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, planted = planted_set
    again = _plant().build(tmp_path, sample_runs_path() / "dataset", seed=17, per_kind=8)
    assert again == planted
    for name in ("dataset/labels.jsonl", "dataset/documents.jsonl", "runs/oracle/results.jsonl"):
        assert (tmp_path / name).read_bytes() == (root / name).read_bytes()


@pytest.mark.slow
def test_planted_categories_are_found(planted_set: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, planted = planted_set
    con = _load(root, tmp_path / "store.duckdb")
    assigned = _assigned(classify_run(con, "oracle", store=False).to_pylist())
    matrix = Counter((p["category"], assigned.get(c, "none")) for c, p in planted.items())
    columns = sorted({a for _, a in matrix}, key=lambda a: (CATEGORY_ORDER.index(a) if a in CATEGORY_ORDER else 9, a))
    rows = sorted({p for p, _ in matrix})
    print("\nplanted \\ assigned " + " | ".join(columns))
    for p in rows:
        print(f"{p:>18} " + " | ".join(f"{matrix[(p, a)]:>{len(a)}}" for a in columns))
    for p in rows:
        if p == "clean":
            continue
        total = sum(n for (q, _), n in matrix.items() if q == p)
        accuracy = matrix[(p, p)] / total
        wrong = sorted(c for c, q in planted.items() if q["category"] == p and assigned.get(c) != p)
        assert accuracy >= 0.95, f"{p}: {matrix[(p, p)]}/{total} = {accuracy:.3f}; wrong: {wrong}"
    wrong_clean = sorted(c for c, p in planted.items() if p["category"] == "clean" and c in assigned)
    assert wrong_clean == [], f"failures reported on clean cases: {wrong_clean}"
    assert matrix[("clean", "none")] >= 50


@pytest.mark.slow
def test_the_leaking_run_is_never_cited(planted_set: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, planted = planted_set
    con = _load(root, tmp_path / "store.duckdb")
    rows = classify_run(con, "oracle", store=False).to_pylist()
    unpermitted = {c for c, p in planted.items() if p["kind"] == "label-unpermitted"}
    cited = [
        r["case_id"]
        for r in rows
        if r["case_id"] in unpermitted
        and (r["rule"] == "ranking.found-by-other-run" or "unfiltered" in json.dumps(json.loads(r["evidence"])))
    ]
    assert cited == []
    assert {r["rule"] for r in rows if r["case_id"] in unpermitted} == {"dataset.unpermitted-evidence"}


@pytest.mark.slow
def test_without_a_manifest_no_failure_is_absent_from_corpus(
    planted_set: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, planted = planted_set
    con = _load(root, tmp_path / "store.duckdb", manifest=False)
    rows = classify_run(con, "oracle", store=False).to_pylist()
    assert rows and not [r for r in rows if r["rule"] == "ingestion.absent-from-corpus"]
    # every document dropped from the index (or the corpus) is now undetermined, not ingestion
    dropped = {c for c, p in planted.items() if p["kind"] in ("index-dropped", "corpus-dropped")}
    assert {r["rule"] for r in rows if r["case_id"] in dropped} == {"undetermined.not-retrieved-by-any-run"}
