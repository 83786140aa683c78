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
