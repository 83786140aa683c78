"""`compare --explain` on regressions planted in the sample: each kind of planted drop gets its own cause on at
least 90% of the (case, measure) pairs it made drop, and the cases left alone get none.

The baseline is the sample's two-stage ``hybrid-rerank``; the candidate is a copy of it with, on disjoint sets of
cases that hold a relevant unit (grade >= 2, the sample's threshold) in the final top 8: the relevant units removed
from both stages (candidate-miss), moved below the top 8 of the final stage only (rerank-inversion), three
unlabelled units the baseline never returned put on top of the final list (unjudged-displacement), the final top 8
given one score in reversed order (tie-order). A label change is planted between two dataset versions.
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.annotate.label_import import import_labels
from ragtriage.experiments.explain import CAUSES, explain, explain_drops
from ragtriage.gate import sources
from ragtriage.gate.compare import compare, compare_tables
from ragtriage.sample import sample_runs_path
from ragtriage.store import connect, current_dataset_version, load_dataset, load_run

BASE = "hybrid-rerank"
KINDS = ("candidate-miss", "rerank-inversion", "unjudged-displacement", "tie-order")
PER_KIND = 8
K = 8
KS = (3, 5, K)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _relevant_in_top(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """case -> the relevant units (grade >= 2) of the baseline's final top 8 (ranks are 1..n with distinct units)."""
    rows = con.execute(
        f"""SELECT r.case_id, list(r.unit_id) FROM results r JOIN qrels q USING (case_id, unit_id)
            WHERE r.run_id = '{BASE}' AND r.stage = 'final' AND r.rank <= {K} AND q.grade >= 2
            GROUP BY r.case_id ORDER BY r.case_id"""
    ).fetchall()
    return {str(c): set(u) for c, u in rows}


def _renumber(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "rank": i} for i, r in enumerate(rows, start=1)]


def _plant(root: Path, relevant: dict[str, set[str]]) -> tuple[Path, dict[str, str]]:
    sample = sample_runs_path()
    results = _rows(sample / "runs" / BASE / "results.jsonl")
    labels = _rows(sample / "dataset" / "labels.jsonl")
    documents = _rows(sample / "dataset" / "documents.jsonl")
    labelled = {(r["case_id"], r["chunk_id"]) for r in labels}
    lists: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(results, key=lambda r: (r["case_id"], r["stage"], r["rank"])):
        lists[(r["case_id"], r["stage"])].append(r)
    chosen = sorted(relevant)
    plan = {c: KINDS[i % len(KINDS)] for i, c in enumerate(chosen[: PER_KIND * len(KINDS)])}
    for case, kind in plan.items():
        rel = relevant[case]
        final, cand = lists[(case, "final")], lists[(case, "candidate")]
        unit = "chunk_id"
        if kind == "candidate-miss":
            lists[(case, "final")] = _renumber([r for r in final if r[unit] not in rel])
            lists[(case, "candidate")] = _renumber([r for r in cand if r[unit] not in rel])
        elif kind == "rerank-inversion":
            kept = [r for r in final if r[unit] not in rel]
            have = {r[unit] for r in final}
            fill = [{**r, "stage": "final"} for r in cand if r[unit] not in have and r[unit] not in rel]
            moved = [r for r in final if r[unit] in rel]
            top = (kept + fill)[:K]
            lists[(case, "final")] = _renumber(top + moved)
        elif kind == "unjudged-displacement":
            seen = {r[unit] for r in final + cand}
            new = [d for d in documents if (case, d["chunk_id"]) not in labelled and d["chunk_id"] not in seen][:3]
            high = max(r["score"] for r in final) + 1.0
            extra = [
                {
                    "case_id": case,
                    "stage": "final",
                    "document_id": d["document_id"],
                    "chunk_id": d["chunk_id"],
                    "score": high + 3 - i,
                }
                for i, d in enumerate(new)
            ]
            lists[(case, "final")] = _renumber(extra + final)
        else:  # tie-order: the top 8 at one score, in reversed order
            top = [{**r, "score": 0.5} for r in reversed(final[:K])]
            lists[(case, "final")] = _renumber(top + final[K:])
    run = root / "planted"
    run.mkdir()
    manifest = json.loads((sample / "runs" / BASE / "run.json").read_text(encoding="utf-8"))
    (run / "run.json").write_text(json.dumps({**manifest, "run_id": "planted"}), encoding="utf-8")
    with (run / "results.jsonl").open("w", encoding="utf-8") as f:
        for key in sorted(lists):
            for r in lists[key]:
                f.write(json.dumps(r) + "\n")
    return run, plan


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("explain")
    db = root / "store.duckdb"
    con = connect(db)
    try:
        load_dataset(con, sample_runs_path() / "dataset")
        load_run(con, sample_runs_path() / "runs" / BASE)
        run, plan = _plant(root, _relevant_in_top(con))
        load_run(con, run)
    finally:
        con.close()
    return db, plan


@pytest.mark.slow
def test_each_planted_kind_gets_its_cause(planted: tuple[Path, dict[str, str]]) -> None:
    db, plan = planted
    con = connect(db, read_only=True)
    try:
        comparison = compare(con, "planted", BASE, KS)
        result = explain(con, comparison)
    finally:
        con.close()
    rows = result.explained.to_pylist()
    drops = [p for p in comparison.pairs.to_pylist() if p["diff"] < -1e-12]
    assert len(rows) == len(drops)  # every drop explained once, nothing else
    assert all(r["delta"] < 0 and r["cause"] in CAUSES for r in rows)
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        assert r["case_id"] in plan, f"untouched case {r['case_id']} got a cause"
        by_kind[plan[r["case_id"]]][r["cause"]] += 1
    print({k: dict(v) for k, v in by_kind.items()})
    for kind in KINDS:
        got = by_kind[kind]
        assert sum(got.values()) >= PER_KIND, f"{kind}: too few regressed pairs to judge ({dict(got)})"
        assert got[kind] / sum(got.values()) >= 0.9, f"{kind}: {dict(got)}"
    counts = {(r["measure"], r["cause"]): r["cases"] for r in result.counts.to_pylist()}
    for measure in {r["measure"] for r in rows}:
        assert sum(v for (m, _), v in counts.items() if m == measure) == sum(r["measure"] == measure for r in rows)


@pytest.mark.slow
def test_evidence_of_a_candidate_miss_names_the_lost_units(planted: tuple[Path, dict[str, str]]) -> None:
    db, plan = planted
    con = connect(db, read_only=True)
    try:
        lost = _relevant_in_top(con)
        result = explain(con, compare(con, "planted", BASE, (K,)))
    finally:
        con.close()
    case = next(c for c, kind in plan.items() if kind == "candidate-miss")
    row = next(r for r in result.explained.to_pylist() if r["case_id"] == case and r["measure"] == f"R@{K}")
    evidence = json.loads(row["evidence"])
    assert row["cause"] == "candidate-miss"
    assert evidence["retrieval_list"] == "candidate stage"
    assert {u["unit"] for u in evidence["units"]} == lost[case]
    assert all(u["candidate_pos"] is None and u["candidate_stage_pos"] is None for u in evidence["units"])
    assert evidence["missing_from_retrieval"] == len(lost[case])


@pytest.mark.slow
def test_label_change_between_versions(tmp_path: Path) -> None:
    """The baseline's figures on the first version, the same lists' figures after a relabelling: the cases whose
    relevant units were regraded 0 drop, and their cause is label-change; the others do not drop."""
    con = connect(tmp_path / "store.duckdb")
    try:
        load_dataset(con, sample_runs_path() / "dataset")
        load_run(con, sample_runs_path() / "runs" / BASE)
        relevant = _relevant_in_top(con)
        names = [f"{f}@{K}" for f in ("P", "R", "RR", "nDCG", "AP", "Success")]
        first = current_dataset_version(con)
        cases = sources.case_slices(con, first, None)
        before = sources.measure_values(con, BASE, [*names, "NumRel"]).rename_columns(["case_id", *names, "n_relevant"])
        # a case keeps another relevant unit, so it stays among the paired cases (those with relevant labels)
        changed = [c for c in sorted(relevant) if len(relevant[c]) >= 2][:PER_KIND]
        path = tmp_path / "relabel.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["case_id", "document_id", "chunk_id", "grade"])
            for case in changed:
                unit = sorted(relevant[case])[0]
                w.writerow([case, unit.split("#")[0], unit, 0])
        import_labels(con, path, annotator="adjudicated")
        second = current_dataset_version(con)
        after = sources.measure_values(con, BASE, [*names, "NumRel"]).rename_columns(["case_id", *names, "n_relevant"])
        _, pairs, _ = compare_tables(after, before, cases, names)
        drops = pairs.select(["case_id", "metric", "diff"]).rename_columns(["case_id", "measure", "delta"])
        result = explain_drops(con, BASE, BASE, drops, names, (second, first))
    finally:
        con.close()
    rows = result.explained.to_pylist()
    assert len(rows) >= PER_KIND
    assert {r["case_id"] for r in rows} <= set(changed)
    assert sum(r["cause"] == "label-change" for r in rows) / len(rows) >= 0.9
    row = rows[0]
    evidence = json.loads(row["evidence"])
    assert evidence["dataset_versions"] == {"candidate": second, "baseline": first}
    assert evidence["label_changes"] == 1
    assert evidence["changed_labels"][0]["candidate_grade"] == 0
