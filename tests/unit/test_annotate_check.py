"""`dataset check` on constructed leaks: each check fires on its leak and stays quiet on the near miss."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

from ragtriage.annotate import dataset_check, import_labels
from ragtriage.cli import app
from tests.factory import make_store

DATASET = {"name": "t", "version": "1", "unit": "chunk", "relevance_threshold": 2, "created_at": "2024-06-01T00:00:00Z"}
CASES = [
    {"id": "c1", "query": "How do I reset my password?", "split": "dev", "source_family": "it"},
    {"id": "c2", "query": "how do I   reset my PASSWORD", "split": "holdout", "source_family": "it"},
    {
        "id": "c3",
        "query": "What is the refund policy for annual plans in Europe",
        "split": "dev",
        "source_family": "billing",
    },
    {
        "id": "c4",
        "query": "Europe: what is the refund policy for annual plans in?",
        "split": "holdout",
        "source_family": "sales",
    },
    {
        "id": "c5",
        "query": "What is the refund policy for monthly plans in Asia",
        "split": "holdout",
        "source_family": "asia",
    },
    {
        "id": "c6",
        "query": "Explain why the quarterly report must be filed before the tenth business day",
        "split": "dev",
        "source_family": "finance",
    },
    {
        "id": "c7",
        "query": "Explain why the annual audit must be signed by two directors",
        "split": "dev",
        "source_family": "finance",
    },
]
DOCS = [
    {
        "document_id": "fin",
        "chunk_id": "fin#1",
        "acl": ["all"],
        "updated_at": "2024-01-01T00:00:00",
        "text": "Reminder: the quarterly report must be filed before the tenth business day of each month.",
    },
    # shares 7 consecutive tokens with c7 ("the annual audit must be signed by"), not 8
    {
        "document_id": "aud",
        "chunk_id": "aud#1",
        "acl": ["all"],
        "updated_at": "2024-01-01T00:00:00",
        "text": "By law the annual audit must be signed by the board.",
    },
    {
        "document_id": "pw",
        "chunk_id": "pw#1",
        "acl": ["all"],
        "updated_at": "2024-07-01T00:00:00",
        "text": "Open settings and choose reset.",
    },
    {
        "document_id": "pw",
        "chunk_id": "pw#2",
        "acl": ["all"],
        "updated_at": "2024-05-01T00:00:00",
        "text": "Call the help desk.",
    },
]
LABELS = [
    {"case_id": "c6", "document_id": "fin", "chunk_id": "fin#1", "grade": 3},
    {"case_id": "c7", "document_id": "aud", "chunk_id": "aud#1", "grade": 3},
    {"case_id": "c1", "document_id": "pw", "chunk_id": "pw#1", "grade": 2},  # unit updated after 2024-06-01
    {"case_id": "c1", "document_id": "pw", "chunk_id": "pw#2", "grade": 1},  # updated before: fine
]


def _store(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_store(tmp_path, dataset=DATASET, cases=CASES, labels=LABELS, documents=DOCS)


def test_each_leak_is_reported(tmp_path: Path) -> None:
    con = _store(tmp_path)
    rows = dataset_check(con).select(["check", "case_id", "other", "subject"]).to_pylist()
    assert rows == [
        {"check": "copied-evidence", "case_id": "c6", "other": None, "subject": "fin#1"},
        {"check": "family-across-splits", "case_id": None, "other": None, "subject": "it"},
        {"check": "label-after-change", "case_id": "c1", "other": "default", "subject": "pw#1"},
        {"check": "near-duplicate-query", "case_id": "c1", "other": "c2", "subject": None},
        {"check": "near-duplicate-query", "case_id": "c3", "other": "c4", "subject": None},
    ]
    detail = {r["check"] + (r["case_id"] or ""): r["detail"] for r in dataset_check(con).to_pylist()}
    assert detail["near-duplicate-queryc1"].startswith("same normalised query")
    assert detail["near-duplicate-queryc3"].startswith("token-set Jaccard 1.0")
    # c6 shares "the quarterly report must be filed before the tenth business day": 11 tokens, four 8-grams
    assert "4 span(s) of 8" in detail["copied-evidencec6"]
    assert detail["family-across-splits"] == "source_family it appears in dev (1 cases), holdout (1 cases)"


def test_thresholds_move_the_line(tmp_path: Path) -> None:
    con = _store(tmp_path)
    checks = dataset_check(con, span=7, jaccard=0.5).select(["check", "case_id", "other"]).to_pylist()
    assert {"check": "copied-evidence", "case_id": "c7", "other": None} in checks
    # c3 / c5 share 8 of 12 distinct tokens: Jaccard 0.67, reported only below the default 0.9
    assert {"check": "near-duplicate-query", "case_id": "c3", "other": "c5"} in checks


def test_relabelling_after_the_change_clears_the_warning(tmp_path: Path) -> None:
    con = _store(tmp_path)
    (tmp_path / "new.csv").write_text("case_id,document_id,chunk_id,grade\nc1,pw,pw#1,3\n")
    import_labels(con, tmp_path / "new.csv", annotator="bob")
    rows = [r for r in dataset_check(con).to_pylist() if r["check"] == "label-after-change"]
    # default's old label is still older than the document; bob's new one is not
    assert [(r["case_id"], r["other"]) for r in rows] == [("c1", "default")]


@pytest.mark.slow
def test_cli_strict_exit_code(tmp_path: Path) -> None:
    _store(tmp_path).close()
    db = str(tmp_path / "store.duckdb")
    runner = CliRunner()
    res = runner.invoke(app, ["dataset", "check", "--db", db])
    assert res.exit_code == 0, res.output
    assert "5 warning(s)" in res.output
    res = runner.invoke(app, ["dataset", "check", "--db", db, "--strict"])
    assert res.exit_code == 1
    res = runner.invoke(app, ["dataset", "check", "--db", db, "--jaccard", "0"])
    assert res.exit_code == 2


def test_near_duplicates_match_brute_force(tmp_path: Path) -> None:
    """The prefix, length and positional filters must not lose a pair that brute-force Jaccard finds."""
    rng = np.random.default_rng(3)
    vocab = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota"]
    cases = [
        {
            "id": f"c{i:02d}",
            "query": " ".join(rng.choice(vocab, size=int(rng.integers(2, 9)))),
            "split": "dev" if i % 2 else "holdout",
        }
        for i in range(70)
    ]
    one_label = [{"case_id": "c00", "document_id": "d", "chunk_id": "d#1", "grade": 0}]
    con = make_store(tmp_path, cases=cases, labels=one_label)
    sets = {c["id"]: (set(c["query"].split()), c["split"]) for c in cases}
    for t in (0.5, 0.6, 0.75, 0.9, 1.0):
        expected = {
            tuple(sorted((a, b), key=lambda x: sets[x][1]))
            for a, (sa, pa) in sets.items()
            for b, (sb, pb) in sets.items()
            if pa < pb and len(sa & sb) / len(sa | sb) >= t - 1e-12
        }
        got = dataset_check(con, jaccard=t).filter(pc.equal(pc.field("check"), "near-duplicate-query"))
        assert set(zip(got.column("case_id").to_pylist(), got.column("other").to_pylist(), strict=True)) == expected
        assert expected or t == 1.0
