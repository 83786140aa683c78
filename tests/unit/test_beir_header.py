"""The BEIR header rule (``contract.sniff.beir_header``) and each reader's verdict on a file whose first lines
are ``#`` lines: sniffing skips them, the BEIR stager reads them as data."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ragtriage.contract.sniff import Sniffed, beir_header, sniff
from ragtriage.contract.trec import stage_beir_qrels

HEADER = "query-id\tcorpus-id\tscore\n"
DATA = "q1\td1\t1\nq2\td2\t0\n"


@pytest.mark.parametrize(
    ("lines", "comments", "verdict"),
    [
        ([["query-id", "corpus-id", "score"]], True, True),
        ([["q1", "d1", "1"]], True, False),
        ([["q1", "d1", "0.5"]], True, False),  # a fractional grade is a data line, refused by the reader
        ([[], ["query-id", "corpus-id", "score"]], False, True),  # blank lines never decide
        ([["#", "note"], ["query-id", "corpus-id", "score"]], True, True),
        ([["#", "note"], ["query-id", "corpus-id", "score"]], False, False),
        ([["query-id", "corpus-id"]], True, False),
        ([], True, False),
    ],
)
def test_the_rule(lines: list[list[str]], comments: bool, verdict: bool) -> None:
    assert beir_header(lines, comments=comments) is verdict


def _file(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "qrels.tsv"
    p.write_text(text)
    return p


def test_a_plain_header_is_one_for_every_reader(tmp_path: Path) -> None:
    p = _file(tmp_path, HEADER + DATA)
    assert sniff(p, "qrels") == Sniffed("beir", header=True)
    assert sniff(p, "qrels", "beir") == Sniffed("beir", header=True)
    staged = stage_beir_qrels(duckdb.connect(), p, "stg")
    assert (staged.rows, staged.findings) == (2, [])


def test_comment_lines_first_keep_each_readers_verdict(tmp_path: Path) -> None:
    p = _file(tmp_path, "# exported\n" + HEADER + DATA)
    # sniffing skips the # line: the header line after it is the header
    assert sniff(p, "qrels") == Sniffed("beir", header=True)
    assert sniff(p, "qrels", "beir") == Sniffed("beir", header=True)
    # the stager reads the # line as the first line: no header, so both lines are refused
    staged = stage_beir_qrels(duckdb.connect(), p, "stg")
    assert sorted((f.line, f.code) for f in staged.findings) == [(1, "bad-columns"), (2, "wrong-type")]
    # told the sniffed verdict, it drops the first line it reads (the # line) and refuses the header as data
    told = stage_beir_qrels(duckdb.connect(), p, "stg", header=True)
    assert [(f.line, f.code) for f in told.findings] == [(2, "wrong-type")]
