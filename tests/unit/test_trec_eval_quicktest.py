"""trec_eval's own `make quicktest`, run with `python -m ragtriage.trec_eval`: stdout byte for byte.

The inputs and expected outputs are trec_eval's own files, not kept in this repository: the tests read trec_eval's
`test/` folder from $RAGTRIAGE_TREC_EVAL_TESTS or from `../shared/trec_eval/test` beside the checkout (the steering
repository's shared folder), and skip, saying what to place where, when it is absent. Without it, the trec_eval
layout and figures are still checked on seeded files of our own against pytrec_eval (test_trec_eval_files.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _folder() -> Path | None:
    env = os.environ.get("RAGTRIAGE_TREC_EVAL_TESTS")
    folder = Path(env) if env else ROOT.parent / "shared" / "trec_eval" / "test"
    return folder if (folder / "out.test").is_file() else None


# the targets of trec_eval's Makefile `quicktest` but -Z's (its zscores)
TARGETS = [
    ("out.test", ["qrels.test", "results.test"]),
    ("out.test", ["qrels.test.with-comments", "results.test"]),
    ("out.comment.test", ["qrels.comment.test", "results.comment.test"]),
    ("out.test.a", ["-m", "all_trec", "qrels.test", "results.test"]),
    ("out.test.aq", ["-m", "all_trec", "-q", "qrels.test", "results.test"]),
    ("out.test.aqc", ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"]),
    ("out.test.aqcM", ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"]),
    ("out.test.aql", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level", "results.test"]),
    # the preference and judgment-group formats (-R; ragtriage.trec_eval.prefs)
    ("out.test.prefs", ["-m", "all_prefs", "-q", "-R", "prefs", "prefs.test", "prefs.results.test"]),
    ("out.test.prefs", ["-m", "all_prefs", "-q", "-R", "prefs", "prefs.comment.test", "prefs.results.test"]),
    ("out.test.qrels_prefs", ["-m", "all_prefs", "-q", "-R", "qrels_prefs", "qrels.test", "results.test"]),
    ("out.test.qrels_jg", ["-m", "qrels_jg", "-q", "-R", "qrels_jg", "qrels.123", "results.test"]),
    ("out.test.qrels_jg", ["-m", "qrels_jg", "-q", "-R", "qrels_jg", "qrels.comments.123", "results.test"]),
]
# gain parameters and every parameterised measure (issue 53)
TARGETS.append(
    (
        "out.test.meas_params",
        ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m",
         "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75", "-mndcg.1=3,2=9,4=4.5",
         "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20", "qrels.test", "results.test"],
    )
)  # fmt: skip
# z-scores against trec_eval's zscores_file (a flag taking a file of the test folder: see _argv)
TARGETS.append(("out.test.aqZ", ["-q", "-m", "all_trec", "-Z", "@zscores_file", "qrels.test", "results.test"]))


@pytest.mark.parametrize(("expected", "args"), TARGETS, ids=[f"{e}:{' '.join(a)}" for e, a in TARGETS])
def test_quicktest_target_byte_for_byte(expected: str, args: list[str], tmp_path: Path) -> None:
    folder = _folder()
    if folder is None:
        pytest.skip(
            "trec_eval's test folder is absent: place usnistgov/trec_eval's test/ at ../shared/trec_eval/test "
            "beside the checkout, or set RAGTRIAGE_TREC_EVAL_TESTS to it"
        )
    argv = [str(folder / a[1:]) if a.startswith("@") else a for a in args[:-2]]
    argv += [str(folder / a) for a in args[-2:]]
    done = subprocess.run(
        [sys.executable, "-m", "ragtriage.trec_eval", *argv], capture_output=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (folder / expected).read_bytes()


def test_refusals_keep_trec_evals_exit_codes(tmp_path: Path) -> None:
    """A docno twice in a list (exit 4, after the queries before it), an unknown measure (exit 1)."""
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 1\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 c 1 2.0 t\nq2 Q0 c 2 1.0 t\n")

    def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        cmd = [sys.executable, "-m", "ragtriage.trec_eval", *args]
        return subprocess.run(cmd, capture_output=True, check=False)

    dup = cli("-q", "-m", "P.1", str(qrels), str(run))
    assert dup.returncode == 4
    assert dup.stdout == b"P_1                   \tq1\t1.0000\n"
    assert b"'q2'" in dup.stderr and b"twice in its ranked list" in dup.stderr
    bad = cli("-m", "nosuch", str(qrels), str(run))
    assert bad.returncode == 1 and bad.stdout == b""


# flags beyond the quicktest, compared with a trec_eval binary when $RAGTRIAGE_TREC_EVAL_BIN names one
AGAINST_BINARY = [
    ["-J", "-m", "all_trec", "-q", "qrels.test", "results.test"],
    ["-n", "-q", "-m", "all_trec", "qrels.test", "results.test"],
    ["-m", "all_trec", "-q", "-l2", "-J", "qrels.rel_level", "results.test"],
    ["-m", "all_trec", "-q", "-M5", "-l3", "qrels.rel_level", "results.test"],
    ["-q", "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m",
     "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75", "-mndcg_cut.10,20,23.4",
     "-msuccess.2,5,20", "qrels.test", "results.test"],
    ["-m", "set", "-N", "100000", "-mutility.1,-1,-1,0.01", "-q", "qrels.test", "results.test"],
    ["-m", "rbp.p=0.5", "-m", "rbp_resid.p=0.8", "-m", "unj.1,3", "-m", "relative_P.2", "-m", "set_F.0.5", "-q",
     "qrels.rel_level", "results.test"],
    ["-c", "-q", "-m", "all_trec", "qrels-302.test", "results-302.test"],
    ["-q", "qrels.test", "results.trunc"],
]  # fmt: skip


@pytest.mark.parametrize("args", AGAINST_BINARY, ids=[" ".join(a) for a in AGAINST_BINARY])
def test_same_bytes_and_exit_as_trec_eval_binary(args: list[str], tmp_path: Path) -> None:
    binary, folder = os.environ.get("RAGTRIAGE_TREC_EVAL_BIN"), _folder()
    if not binary or folder is None:
        pytest.skip("set RAGTRIAGE_TREC_EVAL_BIN to a trec_eval binary and place trec_eval's test/ folder (above)")
    argv = [*args[:-2], *(str(folder / a) for a in args[-2:])]
    ours = subprocess.run([sys.executable, "-m", "ragtriage.trec_eval", *argv], capture_output=True, check=False)
    theirs = subprocess.run([binary, *argv], capture_output=True, check=False)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), ours.stderr.decode()
