"""After a label import moves the current dataset version, classifications and gate verdicts name the new one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.annotate.label_import import import_labels
from ragtriage.classify import classify_run, failures
from ragtriage.gate.sources import paired_version
from ragtriage.store import current_dataset_version
from tests.factory import make_store


@pytest.mark.slow
def test_classification_and_gate_follow_the_current_version(tmp_path: Path) -> None:
    docs = [
        {"document_id": "d1", "chunk_id": "d1#1", "acl": ["all"]},
        {"document_id": "d2", "chunk_id": "d2#1", "acl": ["all"]},
    ]
    results = [{"case_id": "q1", "document_id": "d2", "chunk_id": "d2#1", "score": 1.0}]
    con = make_store(
        tmp_path,
        cases=[{"id": "q1", "query": "reset password", "principal": {"id": "u", "groups": ["all"]}}],
        labels=[{"case_id": "q1", "document_id": "d1", "chunk_id": "d1#1", "grade": 3}],
        documents=docs,
        runs=[
            {"run": {"run_id": "a", "k": 5}, "results": results},
            {"run": {"run_id": "b", "k": 5}, "results": results},
        ],
    )
    first = current_dataset_version(con)
    classify_run(con, "a", store=True)
    before = failures(con, "a")
    assert set(before.column("dataset_version").to_pylist()) == {first}
    assert before.column("failure").to_pylist() == ["no-relevant-in-top-k"]
    labelled = tmp_path / "more.csv"
    labelled.write_text("case_id,document_id,chunk_id,grade\nq1,d2,d2#1,2\n", encoding="utf-8")
    import_labels(con, labelled, annotator="alice")
    second = current_dataset_version(con)
    assert second != first
    # the stored rows were classified on the old labels: they are stale and recomputed on the new ones
    rows = failures(con, "a")
    assert set(rows.column("dataset_version").to_pylist()) <= {second}
    # d2#1 at rank 1 is now relevant; d1#1 is still missing, so only the recall bar fails
    assert rows.column("failure").to_pylist() == ["recall-below-bar"]
    assert paired_version(con, "a", "b") == second
