"""Fuzzing `ragtriage trec-eval`'s readers: qrels and runs written by hypothesis from near-valid parts (the reader
fuzz's hostile ids, grades, scores and separators) and damaged bytes. The drop-in keeps trec_eval's exit statuses
(docs/trec_eval.md, "Refusals"): 0 for an evaluation, 1, 2 or 4 for a refusal, never another, never a traceback,
and a refusal names a file on stderr. When ``RAGTRIAGE_TREC_EVAL_BIN`` names a trec_eval binary, an input both
programs evaluate gives the same exit status."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.bad_inputs import no_traceback
from tests.unit.test_reader_fuzz import FIXED, QUICK, SLOW, _damage, damage, trec_qrels, trec_run

REFUSALS = {1, 2, 4}
BIN = os.environ.get("RAGTRIAGE_TREC_EVAL_BIN")
flags = st.sampled_from([[], ["-q"], ["-c"], ["-M", "2"], ["-m", "all_trec"], ["-m", "ndcg_cut.3"], ["-J"]])


def _check(qrels: str, run: str, qd: tuple[int, bytes], rd: tuple[int, bytes], flag: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        q, r = Path(tmp) / "qrels.txt", Path(tmp) / "run.txt"
        q.write_bytes(_damage(qrels.encode(), *qd))
        r.write_bytes(_damage(run.encode(), *rd))
        res = CliRunner().invoke(app, ["trec-eval", *flag, str(q), str(r)])
        assert no_traceback(res), res.output
        assert res.exit_code == 0 or res.exit_code in REFUSALS, (res.exit_code, res.output)
        if res.exit_code in REFUSALS:
            assert res.output.strip(), "a refusal says why"
        if BIN and res.exit_code == 0:
            ref = subprocess.run([BIN, *flag, str(q), str(r)], capture_output=True, timeout=60)
            if ref.returncode >= 0:  # trec_eval crashing on a hostile line is its own fault, not a difference
                assert ref.returncode in {0, *REFUSALS}


def _fuzz(examples: int) -> None:
    @settings(
        max_examples=examples, deadline=None, derandomize=FIXED, suppress_health_check=list(HealthCheck), database=None
    )
    @given(trec_qrels(), trec_run(), damage, damage, flags)
    def run(qrels: str, run_text: str, qd: tuple[int, bytes], rd: tuple[int, bytes], flag: list[str]) -> None:
        _check(qrels, run_text, qd, rd, flag)

    run()


def test_trec_eval_readers_exit_as_trec_eval_and_never_raise() -> None:
    _fuzz(QUICK)


@pytest.mark.slow
def test_trec_eval_readers_many_examples() -> None:
    _fuzz(SLOW)


def test_a_malformed_qrels_line_is_a_refusal_not_a_traceback(tmp_path: Path) -> None:
    """The hand case the fuzz shrinks towards: a qrels line of three fields (trec_eval: "Malformed line", exit 2)."""
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text("q1 0 d1\n")
    r.write_text("q1 Q0 d1 1 1.0 t\n")
    res = CliRunner().invoke(app, ["trec-eval", str(q), str(r)])
    assert no_traceback(res) and res.exit_code == 2 and "qrels.txt" in res.output
