"""The shipped sample_runs/ meets the counts issue 2 promises, loads cleanly, and is what the generator makes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import date, datetime
from pathlib import Path

import pytest

from ragtriage.store import connect, load_dataset, load_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_runs"
DATASET = SAMPLE / "dataset"
RUNS = sorted(p for p in (SAMPLE / "runs").iterdir() if (p / "run.json").exists())
NEGATIVE_BEHAVIORS = {"empty", "below_threshold", "insufficient_evidence"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def cases() -> list[dict]:
    return rows(DATASET / "cases.jsonl")


@pytest.fixture(scope="module")
def documents() -> list[dict]:
    return rows(DATASET / "documents.jsonl")


@pytest.fixture(scope="module")
def labels() -> list[dict]:
    return rows(DATASET / "labels.jsonl")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    con = connect(str(tmp_path_factory.mktemp("sample") / "sample.duckdb"))
    load_dataset(con, DATASET)
    for run in RUNS:
        load_run(con, run)
    yield con
    con.close()


def test_manifest_declares_chunk_unit_threshold_and_rubric() -> None:
    m = json.loads((DATASET / "dataset.json").read_text(encoding="utf-8"))
    assert (m["unit"], m["relevance_threshold"], m["acl_required"]) == ("chunk", 2, True)
    assert m["grade_scale"]["rubric"] == {"0": "irrelevant", "1": "related", "2": "useful", "3": "sufficient"}
    assert all(m[k] for k in ("name", "version", "corpus_snapshot", "created_at", "rubric_version"))


def test_corpus_size_types_tenants_languages(documents: list[dict]) -> None:
    assert len(documents) >= 300
    assert len({d["chunk_id"] for d in documents}) == len(documents)
    assert len({d["document_id"] for d in documents}) >= 60
    assert {"policy", "manual", "faq", "ticket", "release_note"} <= {d["doc_type"] for d in documents}
    assert len({d["tenant"] for d in documents}) >= 2
    assert {"en", "de"} <= {d["language"] for d in documents}
    assert len({g for d in documents for g in d["acl"]}) >= 6
    assert all(d["acl"] for d in documents)
    assert {"body", "heading", "table", "list"} <= {d["chunk_kind"] for d in documents}
    assert len({d["document_id"] for d in documents if d["status"] == "archived"}) >= 3
    for d in documents:
        assert d["status"] in ("current", "archived")
        datetime.fromisoformat(d["updated_at"])
        for f in ("effective_from", "effective_to"):
            if d[f] is not None:
                date.fromisoformat(d[f])


def test_case_mix(cases: list[dict]) -> None:
    assert len(cases) >= 120
    negatives = [c for c in cases if not c["answerable"]]
    assert len(negatives) >= 15
    assert {c["expected_behavior"] for c in negatives} == NEGATIVE_BEHAVIORS
    permission = [c for c in cases if "permission" in c["tags"] and c["principal"]]
    assert len(permission) >= 15
    assert 2 <= sum(c["principal"] is None for c in cases) <= 3
    qtypes = Counter(c["query_type"] for c in cases)
    for q in ("direct", "multi-part", "terminology", "abbreviation", "identifier", "table", "date"):
        assert qtypes[q] >= 2, q
    assert sum(bool((c["filters"] or {}).get("effective_on")) for c in cases) >= 5
    filtered = {k for c in cases for k in (c["filters"] or {})}
    assert {"tenant", "language", "doc_type", "region"} <= filtered
    assert 1 <= sum(c["critical"] for c in cases) < len(cases) // 4


def test_split_by_source_family_never_crosses(cases: list[dict]) -> None:
    splits: dict[str, set[str]] = defaultdict(set)
    for c in cases:
        splits[c["source_family"]].add(c["split"])
    assert all(len(s) == 1 for s in splits.values())
    counts = Counter(c["split"] for c in cases)
    assert counts["dev"] > counts["holdout"] >= 30


def test_labels_double_labelled_sample_and_defects(
    cases: list[dict], labels: list[dict], documents: list[dict]
) -> None:
    assert {lab["grade"] for lab in labels} == {0, 1, 2, 3}
    annotators = Counter(lab["annotator"] for lab in labels)
    assert len(annotators) == 2
    first, second = (a for a, _ in annotators.most_common())
    answerable = {c["id"] for c in cases if c["answerable"]}
    double = {lab["case_id"] for lab in labels if lab["annotator"] == second}
    assert 0.2 <= len(double & answerable) / len(answerable) <= 0.3
    grades = defaultdict(dict)
    for lab in labels:
        grades[(lab["case_id"], lab["chunk_id"])][lab["annotator"]] = lab["grade"]
    diffs = Counter(abs(g[first] - g[second]) for g in grades.values() if len(g) == 2)
    assert diffs[0] > diffs[1] > 0 and 2 <= diffs[2] + diffs[3] <= 3
    known = {d["chunk_id"] for d in documents}
    assert 2 <= len({lab["chunk_id"] for lab in labels if lab["chunk_id"] not in known}) <= 3
    relevant = {lab["case_id"] for lab in labels if lab["grade"] >= 2}
    assert 1 <= len(answerable - relevant) <= 2
    negatives = {c["id"] for c in cases if not c["answerable"]}
    assert not relevant & negatives


def test_runs_stages_and_depths() -> None:
    assert len(RUNS) >= 4
    staged = 0
    for run in RUNS:
        manifest = json.loads((run / "run.json").read_text(encoding="utf-8"))
        res = rows(run / "results.jsonl")
        finals = [r["rank"] for r in res if r["stage"] == "final"]
        cands = [r["rank"] for r in res if r["stage"] == "candidate"]
        assert max(finals) <= manifest["k"] and 5 <= manifest["k"] <= 10
        if cands:
            staged += 1
            assert manifest["candidate_k"] >= 50 and max(cands) >= 50
        events = rows(run / "events.jsonl")
        assert len({e["case_id"] for e in events}) == len(events)
    assert staged >= 2


def test_one_run_has_one_or_two_timeouts_with_fallback() -> None:
    timed = {run.name: [e for e in rows(run / "events.jsonl") if e["timed_out"]] for run in RUNS}
    with_timeouts = {k: v for k, v in timed.items() if v}
    assert len(with_timeouts) == 1
    (events,) = with_timeouts.values()
    assert 1 <= len(events) <= 2 and all(e["fallback"] for e in events)


@pytest.mark.slow
def test_loads_with_only_the_planted_warnings(store) -> None:
    warn = dict(store.execute("SELECT code, count(*) FROM load_warnings GROUP BY code").fetchall())
    assert warn.pop("label-unit-not-in-snapshot") == 3
    assert set(warn) <= {"result-unit-not-in-corpus"}  # the retired FAQ still in the index
    n = store.execute("SELECT count(*) FROM runs").fetchone()
    assert n == (len(RUNS),)


LEAKS = """
    SELECT r.run_id, count(*) FROM results r JOIN cases c USING (case_id) JOIN documents d USING (unit_id)
    WHERE c.principal_id IS NOT NULL
      AND (d.tenant <> c.principal_tenant OR len(list_intersect(d.acl, c.principal_groups)) = 0)
    GROUP BY r.run_id
"""


def test_only_the_no_acl_run_leaks(store) -> None:
    leaks = dict(store.execute(LEAKS).fetchall())
    assert set(leaks) == {"no-acl-filter"} and leaks["no-acl-filter"] > 50


def test_ingestion_gap_hides_labelled_evidence_from_every_run(store) -> None:
    """Relevant units in the snapshot that no run returns at any depth: the sample's ingestion defects."""
    unseen = store.execute("""
        SELECT DISTINCT q.unit_id FROM qrels q JOIN documents d USING (unit_id)
        WHERE q.grade >= 2 AND q.unit_id NOT IN (SELECT unit_id FROM results)
    """).fetchall()
    docs = {u.split("#")[0] for (u,) in unseen}
    assert {"man-bs40", "ds-bg200", "man-bg200"} <= docs


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("bm25s") is None, reason="needs the 'sample' extra (bm25s)")
def test_generator_reproduces_the_shipped_files(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_sample_runs.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )

    def files(root: Path) -> list[Path]:
        return sorted(p.relative_to(root) for sub in ("dataset", "runs") for p in (root / sub).rglob("*.json*"))

    shipped, made = files(SAMPLE), files(tmp_path)
    assert made == shipped
    for rel in shipped:
        assert (tmp_path / rel).read_bytes() == (SAMPLE / rel).read_bytes(), rel
