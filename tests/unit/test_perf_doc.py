"""docs/performance.md and the README's performance summary are rendered from bench/results/*.json
(scripts/perf_doc.py): a results file added without regenerating them, or a hand edit, fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_performance_page_and_readme_summary_match_the_results() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "perf_doc.py"), "--check"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr


def test_every_results_file_says_where_when_and_with_what_it_was_measured() -> None:
    files = sorted((ROOT / "bench" / "results").glob("*.json"))
    assert files, "no bench results: run a bench script (CONTRIBUTING.md)"
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert path.name.startswith(f"{doc['bench']}-"), path.name
        assert {"date", "command", "machine", "versions", "params", "figures", "notes"} <= set(doc), path.name
        assert {"cores", "shared", "load_average_before", "load_average_after"} <= set(doc["machine"]), path.name
        assert "ragtriage" in doc["versions"] and doc["figures"], path.name


def test_each_shape_and_task_set_shows_its_newest_run(tmp_path: Path) -> None:
    """A run timing part of a bench's tasks (``--tasks``) or one data shape does not hide the newest run of the
    others: each variant's newest document gets a section of its own; older ones of the same variant are history."""
    import importlib.util

    import pytest

    spec = importlib.util.spec_from_file_location("perf_doc", ROOT / "scripts" / "perf_doc.py")
    assert spec is not None and spec.loader is not None
    perf_doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(perf_doc)

    def doc(bench: str, date: str, **params: object) -> dict[str, object]:
        return {"bench": bench, "date": date, "params": params}

    docs = {
        "spark-1.json": doc("spark", "2026-01-01", sizes=[1]),  # both tasks (before --tasks existed)
        "spark-2.json": doc("spark", "2026-01-02", sizes=[10], tasks=["measures"]),
        "spark-3.json": doc("spark", "2026-01-03", sizes=[10], tasks=["measures"]),
        "trec-eval-1.json": doc("trec-eval", "2026-01-01", shape="trec"),
        "trec-eval-2.json": doc("trec-eval", "2026-01-02", shape="rag"),
        "scale-1.json": doc("scale", "2026-01-01"),
        "scale-2.json": doc("scale", "2026-01-02"),
    }
    for name, d in docs.items():
        (tmp_path / name).write_text(json.dumps(d), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(perf_doc, "RESULTS", tmp_path)
        shown = {key: d["_file"] for key, d in perf_doc.latest().items()}
    assert shown == {
        "spark:tasks: measures, leakage": "spark-1.json",
        "spark:tasks: measures": "spark-3.json",
        "trec-eval:trec shape": "trec-eval-1.json",
        "trec-eval:rag shape": "trec-eval-2.json",
        "scale": "scale-2.json",
    }
