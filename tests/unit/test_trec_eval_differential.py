"""`ragtriage trec-eval` against a trec_eval binary on seeded random qrels, runs and flag combinations: the same
stdout bytes and exit status. Runs when ``RAGTRIAGE_TREC_EVAL_BIN`` names a trec_eval binary, skipped otherwise; a
case where the binary itself crashes or prints differently on two runs is skipped (its answer is not defined).

Then the fixed regression cases, one per difference the drop-in once had, with the bytes recorded from trec_eval
10.0-rc3 (they run without the binary).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

BIN = os.environ.get("RAGTRIAGE_TREC_EVAL_BIN")
CASES = 150
MEASURES = [
    ["-m", "official"],
    ["-m", "all_trec"],
    ["-m", "ndcg.1=3,2=9"],
    ["-m", "ndcg.0=1,1=3,2=9,4=4.5"],
    ["-m", "Rndcg.1=3,2=9"],
    ["-m", "ndcg_rel.2=5"],
    ["-m", "G.1=2"],
    ["-m", "G.0=1,2=-1", "-m", "ndcg_rel.1=0"],
    ["-m", "iprec_at_recall..1,0,.5", "-m", "P.1,3", "-m", "ndcg_cut.2,4"],
    ["-m", "set", "-m", "utility.2,-1,0,1"],
    ["-m", "bpref", "-m", "infAP", "-m", "binG", "-m", "Rprec_mult.0.5,1.5"],
]


def _case(seed: int, tmp: Path) -> list[str]:
    """A command line over files written for ``seed``: up to 4 queries, a pool of 10 documents, grades -1..3,
    runs with tied scores, queries of the qrels missing from the run and the other way round."""
    rng = random.Random(seed)
    queries = [f"q{i}" for i in range(1, rng.randint(1, 4) + 1)]
    docs = [f"d{i}" for i in range(10)]
    qrels, run = [], []
    for q in queries:
        for d in rng.sample(docs, rng.randint(1, 6)):
            qrels.append(f"{q} 0 {d} {rng.choice([-1, 0, 0, 1, 1, 2, 3])}\n")
        if rng.random() < 0.85:
            for d in rng.sample(docs, rng.randint(1, 8)):
                run.append(f"{q} Q0 {d} 0 {rng.choice([1, 2, 3, rng.random()]):.4f} tag{seed % 3}\n")
    if rng.random() < 0.2:
        run.append(f"qx Q0 d1 1 1.0 tag{seed % 3}\n")
    if not run:
        run.append(f"{queries[0]} Q0 d0 1 1.0 tag\n")
    (tmp / "qrels").write_text("".join(qrels))
    (tmp / "run").write_text("".join(run))
    args = list(rng.choice(MEASURES))
    for flag, p in (("-q", 0.6), ("-c", 0.3), ("-J", 0.3), ("-n", 0.1)):
        if rng.random() < p:
            args.append(flag)
    if rng.random() < 0.25:
        args += ["-M", str(rng.randint(1, 5))]
    if rng.random() < 0.25:
        args += ["-l", str(rng.randint(0, 3))]
    if rng.random() < 0.15:
        args += ["-N", str(rng.randint(10, 100))]
    if rng.random() < 0.15:
        lines = [f"{q} {m} {rng.random():.4f} {rng.choice([0.0, 0.5, 1.0])}\n" for q in queries for m in ("map", "P_5")]
        (tmp / "z").write_text("".join(lines))
        args += ["-Z", str(tmp / "z")]
    return [*args, str(tmp / "qrels"), str(tmp / "run")]


def _ours(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ragtriage.trec_eval", *args], capture_output=True, check=False)


@pytest.mark.slow
def test_same_bytes_and_status_as_the_binary_on_random_cases(tmp_path: Path) -> None:
    if not BIN:
        pytest.skip("set RAGTRIAGE_TREC_EVAL_BIN to a trec_eval binary")
    same, skipped, differ = 0, 0, []
    for seed in range(CASES):
        folder = tmp_path / str(seed)
        folder.mkdir()
        args = _case(seed, folder)
        first = subprocess.run([BIN, *args], capture_output=True, check=False)
        second = subprocess.run([BIN, *args], capture_output=True, check=False)
        if first.returncode < 0 or (first.returncode, first.stdout) != (second.returncode, second.stdout):
            skipped += 1
            continue
        ours = _ours(args)
        if (ours.returncode, ours.stdout) == (first.returncode, first.stdout):
            same += 1
        else:
            differ.append((seed, " ".join(args[:-2]), ours.stderr.decode(errors="replace")[:200]))
    print(f"trec-eval differential: {same} of {CASES - skipped} identical ({skipped} skipped)")
    assert not differ, differ


# ---- fixed regression cases: bytes recorded from trec_eval 10.0-rc3 -------------------------------------------

QRELS = "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq2 0 a 1\nq2 0 d 3\n"
RUN = "q1 Q0 b 1 3.0 t1\nq1 Q0 a 2 2.0 t1\nq1 Q0 x 3 1.0 t1\nq2 Q0 d 1 2.0 t1\nq2 Q0 y 2 1.0 t1\n"


def _files(tmp: Path, qrels: str | bytes = QRELS, run: str | bytes = RUN) -> tuple[str, str]:
    q, r = tmp / "qrels", tmp / "run"
    for path, text in ((q, qrels), (r, run)):
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(q), str(r)


GAINS = [
    (
        ["-q", "-m", "ndcg.1=3,2=9", "-m", "G.1=2", "-m", "Rndcg.1=3,2=9", "-m", "ndcg_rel.2=5"],
        "G_1=2                 \tq1\t0.2500\nndcg_1=3,2=9          \tq1\t0.5213\n"
        "ndcg_rel_2=5          \tq1\t0.5602\nRndcg_1=3,2=9         \tq1\t0.2606\n"
        "G_1=2                 \tq2\t0.6000\nndcg_1=3,2=9          \tq2\t0.6131\n"
        "ndcg_rel_2=5          \tq2\t0.9131\nRndcg_1=3,2=9         \tq2\t0.6131\n"
        "G_1=2                 \tall\t0.4250\nndcg_1=3,2=9          \tall\t0.5672\n"
        "ndcg_rel_2=5          \tall\t0.7367\nRndcg_1=3,2=9         \tall\t0.4369\n",
    ),
    (["-m", "ndcg.0=1,1=3,2=9,4=4.5"], "ndcg_0=1,1=3,2=9,4=4.5\tall\t0.5997\n"),
]


@pytest.mark.parametrize(("args", "expected"), GAINS, ids=[" ".join(a) for a, _ in GAINS])
def test_gain_valued_measures_print_trec_evals_bytes(args: list[str], expected: str, tmp_path: Path) -> None:
    done = _ours([*args, *_files(tmp_path)])
    assert (done.returncode, done.stdout.decode()) == (0, expected), done.stderr.decode()


def test_trailing_blanks_on_a_qrels_line_are_read(tmp_path: Path) -> None:
    done = _ours(["-m", "P.2", *_files(tmp_path, QRELS.replace("\n", " \t\n"))])
    assert (done.returncode, done.stdout) == (0, b"P_2                   \tall\t0.5000\n")


def test_a_blank_qrels_line_stops_as_trec_eval_stops(tmp_path: Path) -> None:
    done = _ours(["-m", "P.2", *_files(tmp_path, "q1 0 a 2\n\nq1 0 b 0\n")])
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().splitlines()[0] == "trec_eval.get_qrels: Malformed line 2"


def test_a_column_one_comment_skips_one_line_only(tmp_path: Path) -> None:
    """trec_eval reads the line after a comment as data: a second comment line of four fields is a judgment."""
    done = _ours(["-q", "-m", "num_rel", *_files(tmp_path, "# x y z\n# 0 a 1\n" + QRELS)])
    assert done.returncode == 4  # query '#' is in the qrels and not in the run: trec_eval stops there
    assert done.stdout == b""


def test_refusals_keep_trec_evals_status_and_first_line(tmp_path: Path) -> None:
    q, r = _files(tmp_path)
    bad_pairs = _ours(["-m", "ndcg.1=3,2", q, r])
    assert bad_pairs.returncode == 2
    assert bad_pairs.stderr.decode().splitlines()[0] == "trec_eval: malformed pair parameters in '1=3,2'"
    fmt = _ours(["-T", "other", q, r])
    assert fmt.returncode == 2
    assert fmt.stderr.decode().splitlines()[0] == "trec_eval: Illegal retrieval results format 'other'"
    usage = _ours(["-x", q, r])
    assert usage.returncode == 1
    malformed = _ours([*_files(tmp_path, QRELS, "# c\n\nq1 Q0 a 1\n")])
    assert malformed.returncode == 2
    assert malformed.stderr.decode().splitlines()[0] == "trec_eval.get_results: Malformed line 1"
    assert b"nothing was loaded" not in malformed.stderr


@pytest.mark.parametrize(("path", "what"), [("/dev/null", "not a regular file"), ("/", "is a directory")])
def test_a_device_or_a_directory_says_what_it_is(path: str, what: str, tmp_path: Path) -> None:
    q, _ = _files(tmp_path)
    done = _ours([q, path])
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert lines[:2] == [
        f"trec_eval.get_results: Cannot read results file '{path}'",
        f"trec_eval: Quit in file '{path}'",
    ]
    assert what in lines[2]


def test_a_run_not_in_utf8_and_an_escape_in_its_tag_are_written_as_bytes(tmp_path: Path) -> None:
    """trec_eval's bytes when stdout is not a terminal: the tag's escape and the invalid byte of a query id."""
    run = RUN.encode().replace(b"t1", b"t\x1b[31m\xff").replace(b"q2", b"q\xe9")
    done = _ours(
        ["-q", "-m", "runid", "-m", "P.1", *_files(tmp_path, QRELS.replace("q2", "q\xe9").encode("latin-1"), run)]
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (
        b"P_1                   \tq1\t0.0000\nP_1                   \tq\xe9\t1.0000\n"
        b"runid                 \tall\tt\x1b[31m\xff\nP_1                   \tall\t0.5000\n"
    )


def test_zscores(tmp_path: Path) -> None:
    (tmp_path / "z").write_text("q1 map 0.5 0.25\nq2 map 0.2 0\n")
    done = _ours(["-q", "-m", "map", "-m", "P.1", "-Z", str(tmp_path / "z"), *_files(tmp_path)])
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (
        b"Zmap                   \tq1\t-1.0000\nZP_1                   \tq1\t-1000000.0000\n"
        b"Zmap                   \tq2\t-1000000.0000\nZP_1                   \tq2\t-1000000.0000\n"
        b"Zmap                   \tall\t-500000.5000\nZP_1                   \tall\t-1000000.0000\n"
    )


def test_judged_only_empty_lists_and_complete_stand_ins(tmp_path: Path) -> None:
    """-J empties q2's list (its one document is unjudged) and -c stands in for q3 (absent from the run): trec_eval's
    NaN (0/0) at the recall cut 0 and in 11pt_avg, and a utility with parameters counting the missed relevant."""
    files = _files(tmp_path, "q1 0 a 1\nq2 0 b 1\nq3 0 c 1\n", "q1 Q0 a 1 1 t\nq2 Q0 x 1 1 t\n")
    done = _ours(["-J", "-c", "-q", "-m", "iprec_at_recall.0,.5", "-m", "11pt_avg", "-m", "utility.1,-1,-1,0", *files])
    assert done.returncode == 0, done.stderr.decode()
    per_query = (
        "iprec_at_recall_0.00  \t{q}\t  -nan\niprec_at_recall_0.50  \t{q}\t0.0000\n"
        "utility_1,-1,-1,0     \t{q}\t-1.0000\n11pt_avg              \t{q}\t  -nan\n"
    )
    assert done.stdout.decode() == (
        "iprec_at_recall_0.00  \tq1\t1.0000\niprec_at_recall_0.50  \tq1\t1.0000\n"
        "utility_1,-1,-1,0     \tq1\t1.0000\n11pt_avg              \tq1\t1.0000\n"
        + per_query.format(q="q2")
        + per_query.format(q="q3")
        + "iprec_at_recall_0.00  \tall\t  -nan\niprec_at_recall_0.50  \tall\t0.3333\n"
        "utility_1,-1,-1,0     \tall\t-0.3333\n11pt_avg              \tall\t  -nan\n"
    )
