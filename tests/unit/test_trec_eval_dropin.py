"""``ragtriage trec-eval`` prints what trec_eval prints, line for line, on the seeded files of
tests/trec_fixtures.py (pytrec_eval, trec_eval's own C code, gives the values): ``-q`` with tied scores, ``-c``
with qrels topics missing from the run, ``-l2`` on grades -1..4, gzipped and padded files, and trec_eval's own
``-c`` total of ``num_rel`` (every judgment graded 1 or more, whatever ``-l`` says). A run missing qrels topics
without ``-c`` stops as trec_eval stops."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app
from tests.trec_fixtures import TREC_MEASURES, Files, read_qrels, read_run, trec_eval_lines

runner = CliRunner()
#: trec_eval's measure names for TREC_MEASURES (a family name prints its default cutoffs, as trec_eval's -m)
FAMILIES = [
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P",
    "recall",
    "ndcg",
    "ndcg_cut",
    "map_cut",
    "success",
]


def _invoke(*args: str) -> tuple[int, str]:
    flags = [f for name in FAMILIES for f in ("-m", name)]
    res = runner.invoke(app, ["trec-eval", *flags, *args])
    return res.exit_code, res.stdout


@pytest.mark.parametrize(
    ("qrels", "results", "flags"),
    [
        ("qrels.txt", "run.txt", []),
        ("qrels.gz", "run.gz", []),
        ("qrels.txt", "trunc.txt", ["-c"]),
        ("graded.gz", "run.gz", ["-l2"]),
        ("graded.txt", "trunc.txt", ["-c", "-l2"]),
        ("graded.txt", "run.txt", ["-c", "-l3"]),
    ],
)
def test_same_lines_as_trec_eval(trec_files: Files, qrels: str, results: str, flags: list[str]) -> None:
    level = int(next((f[2:] for f in flags if f.startswith("-l")), "1"))
    code, out = _invoke("-q", *flags, str(trec_files(qrels)), str(trec_files(results)))
    assert code == 0, out
    expected = trec_eval_lines(
        read_qrels(trec_files(qrels)), read_run(trec_files(results)), TREC_MEASURES, level, complete_total="-c" in flags
    )
    assert out.splitlines() == expected


def test_the_complete_total_counts_every_grade_from_1() -> None:
    """The quirk reproduced is trec_eval's, not a level ignored everywhere: each query's own num_rel keeps -l2."""
    qrels = {"1": {"a": 1, "b": 2, "c": 0}, "2": {"d": 3, "e": 1}}
    run = {"1": {"a": 2.0, "b": 1.0}}
    lines = trec_eval_lines(qrels, run, ["num_rel"], level=2, complete_total=True)
    assert lines == ["num_rel               \t1\t1", "num_rel               \t2\t1", "num_rel               \tall\t4"]


def test_a_missing_qrels_topic_without_c_stops_as_trec_eval(trec_files: Files) -> None:
    code, _ = _invoke("-q", str(trec_files("qrels.txt")), str(trec_files("trunc.txt")))
    assert code == 4
