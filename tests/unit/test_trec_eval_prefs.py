"""``ragtriage trec-eval -R prefs / qrels_prefs / qrels_jg``: the preference and judgment-group families
(``trec_eval/prefs.py``), on hand-derived cases and, when ``$RAGTRIAGE_TREC_EVAL_BIN`` names a trec_eval binary,
side by side with it on seeded random inputs (stdout bytes and exit status)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest


def _ours(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ragtriage.trec_eval", *args], capture_output=True, check=False)


def _values(stdout: bytes) -> dict[tuple[str, str], str]:
    rows = [line.split("\t") for line in stdout.decode().splitlines()]
    return {(name.strip(), qid): value for name, qid, value in rows}


def _evaluated(tmp: Path, rel: str, run: str, *flags: str) -> dict[tuple[str, str], str]:
    """(measure, query) -> printed value of ``trec-eval -q flags`` over the judgments ``rel`` and the run ``run``."""
    (tmp / "rel").write_text(rel)
    (tmp / "run").write_text(run)
    done = _ours("-q", *flags, str(tmp / "rel"), str(tmp / "run"))
    assert done.returncode == 0, done.stderr.decode()
    return _values(done.stdout)


def test_one_group_counts_by_hand(tmp_path: Path) -> None:
    """Query q, one group g of one sub-group: a (level 2) > b (1) > c (0), d (0). The run lists d, b, a, x
    (x unjudged), so the judged documents are numbered in run order d=0, b=1, a=2, then the unretrieved c=3.
    The 5 preferences (a>b, a>c, a>d, b>c, b>d) by number: 2>1 (both retrieved, not fulfilled), 2>3 (a
    retrieved, c not: fulfilled, implied), 2>0 (not fulfilled), 1>3 (fulfilled, implied), 1>0 (not fulfilled).
    Fulfilled 2 of 5 (prefs_simp 0.4); among both-retrieved pairs (2>1, 2>0, 1>0) none (prefs_simp_ret 0);
    every pair has one retrieved end, so _imp = plain. Rnonrel: R = 2 relevant (a, b), N = 2 non-relevant:
    R >= N, nothing added: 0.4. Rnonrel_ret: R = 2 retrieved relevant, N = 1 retrieved non-relevant (d):
    (0 + 2*1) / (3 + 2*1) = 0.4."""
    got = _evaluated(
        tmp_path,
        "q g s a 2\nq g s b 1\nq g s c 0\nq g s d 0\n",
        "q Q0 d 1 9 t\nq Q0 b 2 8 t\nq Q0 a 3 7 t\nq Q0 x 4 6 t\n",
        "-m",
        "all_prefs",
        "-R",
        "prefs",
    )
    expected = {
        "prefs_num_prefs_poss": "5", "prefs_num_prefs_ful": "2", "prefs_num_prefs_ful_ret": "0",
        "prefs_simp": "0.4000", "prefs_pair": "0.4000", "prefs_avgjg": "0.4000", "prefs_avgjg_Rnonrel": "0.4000",
        "prefs_simp_ret": "0.0000", "prefs_pair_ret": "0.0000", "prefs_avgjg_ret": "0.0000",
        "prefs_avgjg_Rnonrel_ret": "0.4000", "prefs_simp_imp": "0.4000", "prefs_pair_imp": "0.4000",
        "prefs_avgjg_imp": "0.4000",
    }  # fmt: skip
    assert {name: got[(name, "q")] for name in expected} == expected
    assert got[("runid", "all")] == "t" and got[("num_q", "all")] == "1"


def test_two_groups_and_sub_groups_by_hand(tmp_path: Path) -> None:
    """Group g1 has two sub-groups, s1: a (2) > b (1) and s2: b (1) > c (0), so a > c by transitivity: 3
    preferences. Group g2 (one sub-group) says c (1) > a (0), the opposite of g1's a > c. The run lists a, c
    (b not retrieved): a=0, c=1, b=2. g1: a>b fulfilled (implied), b>c not (implied), a>c fulfilled (both
    retrieved): 2/3. g2: c>a not fulfilled: 0/1. prefs_simp = 2/4 = 0.5; prefs_avgjg = (2/3 + 0)/2 = 0.3333.
    prefs_pair: pairs {a,b} 1/1, {b,c} 0/1 (c retrieved, b preferred), {a,c} one vote each way: 1/2; mean 0.5.
    _ret: a>c (g1, fulfilled) and c>a (g2, not): simp_ret 1/2, pair_ret 1/2, avgjg_ret (1 + 0)/2 = 0.5."""
    got = _evaluated(
        tmp_path,
        "q g1 s1 a 2\nq g1 s1 b 1\nq g1 s2 b 1\nq g1 s2 c 0\nq g2 x c 1\nq g2 x a 0\n",
        "q Q0 a 1 2 t\nq Q0 c 2 1 t\n",
        "-m",
        "all_prefs",
        "-R",
        "prefs",
    )
    expected = {
        "prefs_num_prefs_poss": "4", "prefs_num_prefs_ful": "2", "prefs_num_prefs_ful_ret": "1",
        "prefs_simp": "0.5000", "prefs_avgjg": "0.3333", "prefs_pair": "0.5000", "prefs_simp_ret": "0.5000",
        "prefs_pair_ret": "0.5000", "prefs_avgjg_ret": "0.5000",
    }  # fmt: skip
    assert {name: got[(name, "q")] for name in expected} == expected


def test_a_group_with_nothing_to_count_zeroes_rnonrel(tmp_path: Path) -> None:
    """Group g0 names one document, non-relevant, in two sub-groups: no preference, R = 0 < N = 1, so trec_eval's
    recount gives 0/0, a NaN in the sum over groups, and the query's prefs_avgjg_Rnonrel is 0 though group g1
    (a > b, fulfilled) scores 1 (R = N = 1). prefs_avgjg, which skips a group with no preference, is (0 + 1)/2."""
    got = _evaluated(
        tmp_path,
        "q g0 s0 d 0\nq g0 s1 d 0\nq g1 s a 1\nq g1 s b 0\n",
        "q Q0 a 1 2 t\nq Q0 b 2 1 t\n",
        "-m",
        "all_prefs",
        "-R",
        "prefs",
    )
    assert got[("prefs_avgjg_Rnonrel", "q")] == "0.0000" and got[("prefs_avgjg_Rnonrel_ret", "q")] == "0.0000"
    assert got[("prefs_avgjg", "q")] == "0.5000" and got[("prefs_simp", "q")] == "1.0000"


def test_judgment_groups_by_hand(tmp_path: Path) -> None:
    """Two groups of q: u1 judges a relevant, u2 judges b and c. The run lists a, b, c (scores 3, 2, 1).
    u1: AP 1, P_5 1/5; u2: AP (1/2 + 2/3)/2 = 0.5833, P_5 2/5. Averaged over the groups: map_avgjg 0.7917,
    P_avgjg_5 0.3000. Rprec_mult_avgjg_1.00: u1 R = 1, top 1 holds a: 1; u2 R = 2, top 2 holds b: 1/2; mean
    0.75."""
    flags = ("-m", "map_avgjg", "-m", "P_avgjg.5", "-m", "Rprec_mult_avgjg.1.0", "-R", "qrels_jg")
    got = _evaluated(
        tmp_path,
        "q u1 a 1\nq u1 b 0\nq u2 a 0\nq u2 b 1\nq u2 c 1\n",
        "q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 c 3 1 t\n",
        *flags,
    )
    assert got[("map_avgjg", "q")] == "0.7917"
    assert got[("P_avgjg_5", "q")] == "0.3000"
    assert got[("Rprec_mult_avgjg_1.00", "q")] == "0.7500"


def test_batches_of_queries_give_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The preference rows are made batch by batch of queries (memory bounded by the largest query): one query
    per batch prints what one batch of all prints, on a seeded case of several queries and groups."""
    from ragtriage.trec_eval import Options, run_trec_eval
    from ragtriage.trec_eval import prefs as module

    rel, run = tmp_path / "rel", tmp_path / "run"
    rng = random.Random(7)
    docs = [(q, g, rng.randint(0, 1), rng.randint(0, 9)) for q in range(5) for g in range(2) for _ in range(6)]
    # one level per (query, group, document), so no group contradicts itself
    rel.write_text("".join(f"q{q} g{g} s{s} d{d} {(q + g + d) % 3}\n" for q, g, s, d in docs))
    run.write_text("".join(f"q{q} Q0 d{d} {d} {rng.randint(1, 3)} t\n" for q in range(5) for d in range(8)))
    opts = Options(["all_prefs"], per_query=True, rel_format="prefs")
    whole = run_trec_eval(rel, run, opts)
    monkeypatch.setattr(module, "PAIRS_PER_BATCH", 1)
    batched = run_trec_eval(rel, run, opts)
    assert whole.text.count("\n") > 5 * 14 and (batched.text, batched.code) == (whole.text, whole.code)


def test_refusals(tmp_path: Path) -> None:
    """trec_eval's exit status and first stderr lines (recorded from trec_eval 10.0-rc3): an unknown -R format
    (exit 2), a malformed line (exit 2, then the file and line in our words), a measure of another format (exit
    4, once both files are read: a malformed file is refused first, as trec_eval reads before it evaluates)."""
    prefs = tmp_path / "prefs"
    prefs.write_text("q g s a 1\nq g s b\n")
    run = tmp_path / "run"
    run.write_text("q Q0 a 1 2 t\n")
    unknown = _ours("-R", "nosuch", "-m", "all_prefs", str(prefs), str(run))
    assert (unknown.returncode, unknown.stderr) == (2, b"trec_eval: Illegal rel_format 'nosuch'\n")
    bad = _ours("-R", "prefs", "-m", "all_prefs", str(prefs), str(run))
    assert bad.returncode == 2 and bad.stdout == b""
    assert bad.stderr.startswith(f"trec_eval.get_prefs: Malformed line 2\ntrec_eval: Quit in file '{prefs}'\n".encode())
    assert f"{prefs}:2".encode() in bad.stderr
    for missing in (tmp_path / "nosuch", Path("/dev/null")):
        gone = _ours("-R", "prefs", str(missing), str(run))
        head = f"trec_eval.get_prefs: Cannot read prefs file '{missing}'\ntrec_eval: Quit in file '{missing}'\n"
        assert gone.returncode == 2 and gone.stderr.startswith(head.encode())
    prefs.write_text("q g s a 1\nq g s b 0\n")
    wrong = _ours("-R", "prefs", "-m", "map", str(prefs), str(run))
    assert (wrong.returncode, wrong.stdout) == (4, b"")
    assert wrong.stderr == (
        b"trec_eval.form_res_qrels: rel_info format not qrels or results format not trec_results\n"
        b"trec_eval: Can't calculate measure 'map'\n"
    )
    official = _ours("-R", "prefs", str(prefs), str(run))  # official's first measure that needs qrels: num_ret
    assert official.returncode == 4 and official.stderr.endswith(b"Can't calculate measure 'num_ret'\n")
    jg = _ours("-R", "prefs", "-m", "map_avgjg", str(prefs), str(run))
    assert jg.returncode == 4 and jg.stderr.startswith(b"trec_eval: rel_info format not qrels_jg or results")
    qrels = tmp_path / "qrels"
    qrels.write_text("q 0 a 1\nq 0 b 0\n")
    on_qrels = _ours("-m", "P.5", "-m", "prefs_simp", str(qrels), str(run))
    assert (on_qrels.returncode, on_qrels.stdout) == (4, b"")
    assert on_qrels.stderr == (
        b"trec_eval.form_prefs_info: prefs_info format not (prefs or qrels_prefs) or results format not "
        b"trec_results\ntrec_eval: Can't calculate measure 'prefs_simp'\n"
    )
    # read first: a preference file given as qrels is a malformed qrels file (exit 2), not exit 4
    as_qrels = _ours("-m", "prefs_simp", str(prefs), str(run))
    assert as_qrels.returncode == 2 and as_qrels.stderr.startswith(b"trec_eval.get_qrels: Malformed line 1\n")


def _random_case(rng: random.Random, tmp: Path, i: int) -> list[str]:
    """A prefs (or qrels_jg) file, a run and flags: several queries, groups of one or several sub-groups whose
    levels follow one hidden order per group (so trec_eval never meets a contradiction it aborts on), ties of
    score, unjudged and unretrieved documents, sometimes a query the run lacks (with or without -c)."""
    docs = [f"d{k:02d}" for k in rng.sample(range(40), 14)]
    fmt = rng.choice(["prefs", "prefs", "qrels_prefs", "qrels_jg"])
    rel_lines, run_lines = [], []
    queries = [f"q{k}" for k in rng.sample(range(10), rng.randint(1, 4))]
    for q in queries:
        pool = rng.sample(docs, rng.randint(2, 10))
        for g in range(rng.randint(1, 3)):
            truth = {d: rng.choice([0, 0, 1, 2, 3]) for d in rng.sample(pool, rng.randint(2, len(pool)))}
            if fmt == "prefs":
                for s in range(rng.choice([1, 1, 2, 3])):
                    for d in rng.sample(sorted(truth), rng.randint(1, len(truth))):
                        level = truth[d] if truth[d] == 0 else truth[d] * 1.5 + s
                        rel_lines.append(f"{q}\tg{g}\ts{s}\t{d}\t{level}")
            else:
                grade = (lambda v: rng.choice([v, v, -1])) if fmt == "qrels_jg" else (lambda v: v)
                rel_lines += [f"{q} u{g} {d} {grade(v)}" for d, v in truth.items()]
        if rng.random() < 0.85 or q == queries[0]:
            listed = rng.sample(docs, rng.randint(1, 12))
            run_lines += [f"{q} Q0 {d} {r} {rng.choice([1, 2, 2, 3, 4.5])} tag" for r, d in enumerate(listed, 1)]
    if fmt == "qrels_jg":  # one grade per (query, group, docno), as trec_eval requires
        seen: dict[str, str] = {}
        for line in rel_lines:
            seen.setdefault(" ".join(line.split()[:3]), line)
        rel_lines = list(seen.values())
    rng.shuffle(rel_lines)
    rng.shuffle(run_lines)
    rel, run = tmp / f"rel{i}", tmp / f"run{i}"
    rel.write_text("\n".join(rel_lines) + "\n")
    run.write_text("\n".join(run_lines) + "\n")
    flags = ["-R", fmt, "-m", "qrels_jg" if fmt == "qrels_jg" else "all_prefs"]
    flags += rng.choice([["-q"], ["-q", "-c"], [], ["-q", "-M3"], ["-c", "-n", "-q"]])
    if fmt == "qrels_jg":
        flags += rng.choice([[], ["-J"], ["-l2"], ["-m", "P_avgjg.1,2,3", "-m", "Rprec_mult_avgjg.0.5,1.5"]])
    return [*flags, str(rel), str(run)]


@pytest.mark.parametrize("seed", range(30))
def test_same_bytes_and_exit_as_trec_eval_binary(seed: int, tmp_path: Path) -> None:
    binary = os.environ.get("RAGTRIAGE_TREC_EVAL_BIN")
    if not binary:
        pytest.skip("set RAGTRIAGE_TREC_EVAL_BIN to a trec_eval binary")
    args = _random_case(random.Random(seed), tmp_path, seed)
    theirs = subprocess.run([binary, *args], capture_output=True, check=False)
    ours = _ours(*args)
    assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), (args, ours.stderr.decode())
