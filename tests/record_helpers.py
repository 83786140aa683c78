"""Small on-disk datasets and readers shared by the `ragtriage record` tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragtriage.record import RecordOptions, RecordPlan
from ragtriage.record.build import response_shape
from ragtriage.record.python_adapter import PythonRetriever


def write_dataset(root: Path, n: int = 12, unit: str = "chunk") -> Path:
    """``n`` cases q01.. with a principal (and a filter on every third), one relevant chunk each."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = {"name": "tiny", "version": "v1", "unit": unit, "relevance_threshold": 1}
    (root / "dataset.json").write_text(json.dumps(manifest), encoding="utf-8")
    cases, labels = [], []
    for i in range(1, n + 1):
        cid = f"q{i:02d}"
        case: dict[str, Any] = {"id": cid, "query": f"question {i}", "principal": {"id": f"u{i}", "groups": ["g"]}}
        if i % 3 == 0:
            case["filters"] = {"language": "de"}
        cases.append(case)
        labels.append({"case_id": cid, "document_id": f"d{i}", "chunk_id": f"d{i}#1", "grade": 1})
    for name, rows in (("cases", cases), ("labels", labels)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def python_retriever(obj: Any, unit: str = "chunk", **paths: str) -> PythonRetriever:
    return PythonRetriever("tests:obj", response_shape(unit, dict(paths)), obj=obj)


def plan(dataset: Path, out: Path, **kw: Any) -> RecordPlan:
    opts = {k: kw.pop(k) for k in list(kw) if k in RecordOptions.__dataclass_fields__}
    return RecordPlan(dataset, out, RecordOptions(**{"k": 3, "concurrency": 4, "timeout_s": 5.0, **opts}), **kw)


def without_latency(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if not k.startswith("latency")} for e in events]
