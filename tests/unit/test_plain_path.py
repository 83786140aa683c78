"""The data most users have: a qrels file and two TREC runs (or the same as BEIR qrels and pytrec_eval JSON runs),
no corpus, no topics, no access rules, no splits, no run.json; through `gate`, `compare`, `failures` and `report`
as a user runs them, on a file store.

The collection is ``tests/cranfield.py``: ``better`` beats ``worse`` on nDCG@10 by a small, significant margin.
The figures are checked against pytrec_eval (trec_eval's code) on the same files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from typer.testing import CliRunner

from ragtriage.cli import app
from tests import cranfield
from tests.unit.test_gate_store import backdate

runner = CliRunner()

THREE_LINES = '[[regression]]\nmetric = "nDCG@10"\nrequire_significance = true\n'


def _invoke(*args: str | Path) -> tuple[int, str, str]:
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.stdout, res.stderr


def _gate(folder: Path, text: str, name: str = "gate.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return backdate(path)  # written before the runs were loaded, as a gate file must be


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, cranfield.Cranfield]:
    folder = tmp_path_factory.mktemp("cranfield")
    data = cranfield.write(folder / "files")
    db = folder / "ir.duckdb"
    code, out, err = _invoke("load", "--db", db, "--qrels", data.qrels, "--run", data.better, "--run", data.worse)
    assert code == 0, out + err
    return db, data


def _ndcg10(data: cranfield.Cranfield) -> dict[str, np.ndarray]:
    """Per-query nDCG@10 of both runs by pytrec_eval, with the gain ragtriage's nDCG@10 uses (docs/metrics.md:
    trec_eval's linear gain, the grade itself; a grade <= 0 gains nothing)."""
    gains = {q: {d: max(g, 0) for d, g in docs.items()} for q, docs in data.qrels_rows.items()}
    ev = pytrec_eval.RelevanceEvaluator(gains, {"ndcg_cut.10"})
    out = {}
    for name, lists in data.runs.items():
        scores = ev.evaluate({q: {d: float(100 - i) for i, d in enumerate(docs)} for q, docs in lists.items()})
        out[name] = np.array([scores[q]["ndcg_cut_10"] for q in sorted(scores)])
    return out


def _verdict(tmp_path: Path, db: Path, gate: Path, run: str, baseline: str) -> tuple[int, dict, str]:
    js = tmp_path / f"verdict-{run}-{gate.stem}.json"
    code, out, err = _invoke(
        "gate", "--db", db, "--gate", gate, "--run", run, "--baseline", baseline, "--json", js, "--no-record"
    )
    verdict = json.loads(js.read_text()) if js.exists() else {}
    js.unlink(missing_ok=True)
    return code, verdict, out + err


@pytest.mark.slow
def test_three_line_gate_passes_the_better_run_and_fails_the_worse_on_regression_alone(
    tmp_path: Path, plain: tuple[Path, cranfield.Cranfield]
) -> None:
    db, data = plain
    gate = _gate(tmp_path, THREE_LINES)
    ref = _ndcg10(data)
    delta = float((ref["better"] - ref["worse"]).mean())
    assert 0.01 < delta < 0.03  # a small gain, as the (+0.0207)

    code, better, out = _verdict(tmp_path, db, gate, "better", "worse")
    assert code == 0, out
    rules = {r["rule"]: r for r in better["rules"]}
    assert set(rules) == {"leakage", "regression:nDCG@10:all splits", "reproducibility"}
    reg = rules["regression:nDCG@10:all splits"]
    assert reg["passed"] and reg["value"] == pytest.approx(delta, abs=1e-9)
    assert reg["p_value"] < 0.05
    assert "on 120 cases (all splits)" in reg["figure"]
    assert "split: all cases (the dataset has no splits; the default is the holdout where it has them)" in reg["notes"]
    leak = rules["leakage"]
    assert leak["passed"] and not leak["applies"]
    assert leak["figure"].startswith("not applicable: the data declares no access rules")
    repro = rules["reproducibility"]
    assert repro["passed"] and repro["threshold"] == "recorded: raw_results, evaluator_version, gate_file_predates_run"
    assert any("no run.json" in n and "dataset_version, corpus_snapshot, configuration" in n for n in repro["notes"])

    code, worse, out = _verdict(tmp_path, db, gate, "worse", "better")
    assert code == 1, out
    failed = [r["rule"] for r in worse["rules"] if not r["passed"]]
    assert failed == ["regression:nDCG@10:all splits"]
    reg = next(r for r in worse["rules"] if r["rule"] == failed[0])
    assert reg["value"] == pytest.approx(-delta, abs=1e-9) and reg["p_value"] < 0.05
    losers = {f["case_id"] for f in reg["failures"]}
    qids = sorted(data.qrels_rows)
    assert losers == {q for q, d in zip(qids, ref["worse"] - ref["better"], strict=True) if d < 0}


@pytest.mark.slow
def test_a_gate_nothing_of_which_applies_exits_2_and_says_why(
    tmp_path: Path, plain: tuple[Path, cranfield.Cranfield]
) -> None:
    db, _ = plain
    for text in ("", '[gate]\nname = "empty"\n', "[negative_cases]\nmin_share = 1.0\n"):
        code, _, out = _verdict(tmp_path, db, _gate(tmp_path, text), "better", "worse")
        assert code == 2, text
        assert "no rule of the gate applies to this data" in out
        assert "leakage: not applicable: the data declares no access rules" in out
        assert "Traceback" not in out


@pytest.mark.slow
def test_reproducibility_asked_for_fails_on_what_a_trec_run_cannot_record(
    tmp_path: Path, plain: tuple[Path, cranfield.Cranfield]
) -> None:
    db, _ = plain
    gate = _gate(tmp_path, THREE_LINES + '\n[reproducibility]\nrequire = ["dataset_version", "raw_results"]\n')
    code, verdict, out = _verdict(tmp_path, db, gate, "better", "worse")
    assert code == 1, out
    repro = next(r for r in verdict["rules"] if r["rule"] == "reproducibility")
    assert not repro["passed"] and repro["figure"] == "dataset_version: run.json records no dataset_version"


@pytest.mark.slow
def test_compare_and_report_do_not_block_runs_on_data_without_access_rules(
    tmp_path: Path, plain: tuple[Path, cranfield.Cranfield]
) -> None:
    db, _ = plain
    code, out, err = _invoke("compare", "--db", db, "--run", "better", "--baseline", "worse", "--k", "10")
    assert code == 0, out + err
    assert "leakage not applicable: the data declares no access rules" in out
    assert "NOT CHECKED" not in out
    code, out, err = _invoke("compare", "--db", db, "--runs", "better,worse", "--baseline", "worse")
    assert code == 0, out + err
    assert "✗" not in out and "NOT CHECKED" not in out
    md = tmp_path / "report.md"
    code, out, err = _invoke("report", "--db", db, "--runs", "better,worse", "--baseline", "worse", "--markdown", md)
    assert code == 0, out + err
    text = md.read_text()
    assert "not applicable: the data declares no access rules" in text and "NOT CHECKED" not in text


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["beir", "json"])
def test_beir_qrels_and_pytrec_eval_json_runs_reach_the_same_verdicts(tmp_path: Path, shape: str) -> None:
    data = cranfield.write(tmp_path / "files")
    gate = _gate(tmp_path, THREE_LINES)
    if shape == "beir":
        qrels, runs = cranfield.write_beir_qrels(tmp_path / "test.tsv", data.qrels_rows), [data.better, data.worse]
    else:
        qrels = data.qrels
        runs = [cranfield.write_json_run(tmp_path / f"{n}.json", data.runs[n]) for n in ("better", "worse")]
    db = tmp_path / "ir.duckdb"
    code, out, err = _invoke("load", "--db", db, "--qrels", qrels, "--run", runs[0], "--run", runs[1])
    assert code == 0, out + err
    ref = _ndcg10(data)
    assert _verdict(tmp_path, db, gate, "better", "worse")[0] == 0
    code, verdict, out = _verdict(tmp_path, db, gate, "worse", "better")
    assert code == 1, out
    (failed,) = [r for r in verdict["rules"] if not r["passed"]]
    assert failed["rule"] == "regression:nDCG@10:all splits"
    assert failed["value"] == pytest.approx(float((ref["worse"] - ref["better"]).mean()), abs=1e-9)


@pytest.mark.slow
def test_failures_on_plain_data_claim_nothing_the_inputs_do_not_hold(plain: tuple[Path, cranfield.Cranfield]) -> None:
    db, data = plain
    code, out, err = _invoke("failures", "--db", db, "--run", "worse", "--k", "10", "--format", "json")
    assert code == 0, out + err
    rows = json.loads(out)["rows"]
    assert len(rows) == len(data.qrels_rows)  # every case misses a relevant document at 10
    for r in rows:
        facts = r["evidence"]["facts"]
        # no topics: the query is the case id, which is no text to find an identifier (or any pattern) in
        assert r["query"] == r["case_id"] and facts["identifiers_missed"] == [] and r["patterns"] == []
        # no corpus: nothing is known to be indexed, in the corpus, or in a section's heading
        assert all(u["indexed"] is None and u["in_corpus"] is None for u in facts["missing"])
        # no run.json: no advice says what the run's configuration is
        assert all("read run.json" not in e for e in r["experiments"])
        absent = [u for u in facts["missing"] if u["location"] == "absent-from-runs"]
        if r["rule"] == "undetermined.not-retrieved-by-any-run":
            assert r["category"] == "undetermined" and absent
            assert facts["assumptions"] == [
                f"{u['unit_id']}: not retrieved (corpus unknown: ingestion or ranking; load a corpus manifest to tell)"
                for u in absent
            ]
        else:  # a relevant document below k in this list: ranking, read from the run itself
            assert r["rule"] == "ranking.below-k" and any(u["location"] == "final-below-k" for u in facts["missing"])


# What qrels and two TREC runs give: labels, this run, the other run; no manifest, principal, topics, events...
THIN = {"labels", "this run", "other runs"}
EMPTY = (None, [], False)
# facts the thin data could carry but this collection never shows: no document holds half a top 10 (one unit
# per document), and no run has a candidate stage
NEVER_HERE = {"crowding_document", "candidate_rank"}


def _known(inputs: tuple[str, ...]) -> bool:
    return all(any(alt in THIN for alt in needed.split("|")) for needed in inputs)


@pytest.mark.slow
def test_every_evidence_fact_of_every_failure_comes_from_an_input_that_was_read(
    plain: tuple[Path, cranfield.Cranfield],
) -> None:
    from ragtriage.classify.facts import FACT_INPUTS, MISSING_INPUTS
    from ragtriage.classify.rules import INPUTS

    assert {i for v in (*FACT_INPUTS.values(), *MISSING_INPUTS.values()) for x in v for i in x.split("|")} <= set(
        INPUTS
    )
    db, _ = plain
    seen: dict[str, list[object]] = {}
    for run in ("better", "worse"):
        code, out, err = _invoke("failures", "--db", db, "--run", run, "--k", "10", "--format", "json")
        assert code == 0, out + err
        for row in json.loads(out)["rows"]:
            facts = row["evidence"]["facts"]
            for field, value in facts.items():
                assert field in FACT_INPUTS, f"{field}: no input named for it"
                seen.setdefault(field, []).append(value)
                if not _known(FACT_INPUTS[field]):
                    assert value in EMPTY, f"{row['case_id']} {field} = {value!r} without {FACT_INPUTS[field]}"
            for unit in facts["missing"]:
                for field, value in unit.items():
                    assert field in MISSING_INPUTS, f"missing.{field}: no input named for it"
                    seen.setdefault(f"missing.{field}", []).append(value)
                    if not _known(MISSING_INPUTS[field]):
                        assert value is None, f"{row['case_id']} missing.{field} = {value!r}"
    # every fact the thin inputs can carry was read from them: some failure shows it
    for field, values in seen.items():
        name = field.removeprefix("missing.")
        inputs = MISSING_INPUTS[name] if field.startswith("missing.") else FACT_INPUTS[name]
        if _known(inputs) and name not in NEVER_HERE:
            assert any(v not in (None, []) for v in values), f"{field} is never read from {inputs}"


@pytest.mark.slow
def test_check_passes_leakage_as_not_applicable_on_data_without_access_rules(
    plain: tuple[Path, cranfield.Cranfield],
) -> None:
    db, _ = plain
    code, out, err = _invoke("check", "--db", db, "--run", "worse", "--format", "json")
    assert code == 0, out + err  # was 3: NOT CHECKED
    doc = json.loads(out)
    assert (
        doc["context"]["verdict"] == "PASSED: leakage not applicable: the data declares no access rules (120 case(s))"
    )
