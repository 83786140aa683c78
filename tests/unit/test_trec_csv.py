"""The CSV-reader fast path for TREC runs and qrels (contract/trec_csv.py) stages exactly what the general reader
stages, rows, line numbers, ranks and findings alike, for well-formed files and for every kind of line that makes
it give up; and inside a load's transaction, giving up never aborts the transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from ragtriage.contract import trec, trec_csv
from ragtriage.contract.trec import LABEL_COLUMNS, stage_trec_qrels, stage_trec_run

GOOD = [f"q{i // 4} Q0 d{(i * 7) % 11} {i % 4 + 1} {10 - i % 4}.5 tag" for i in range(40)]

RUNS: dict[str, list[str] | bytes] = {
    "plain": GOOD,
    "tabs": [line.replace(" ", "\t") for line in GOOD],
    "crlf": "\r\n".join(GOOD).encode() + b"\r\n",
    "no final newline": "\n".join(GOOD).encode(),
    "blank line": [*GOOD[:5], "", *GOOD[5:]],
    "comment": ["# a comment line", *GOOD],
    "six-token comment": ["# a b c d e", *GOOD],
    "six-token comment, number fifth": ["# a b c 1.5 e", *GOOD],
    "empty field in six columns": [*GOOD, "q9 Q0  1 2.0 tag"],
    # past the 64 KiB the delimiter is sniffed from, so the CSV reader itself meets the empty fields
    "empty Q0 past the sniffed head": [*GOOD * 100, "q9  d1 1 2.0 tag"],
    "empty rank past the sniffed head": [*GOOD * 100, "q9 Q0 d1  2.0 tag"],
    "empty docno past the sniffed head": [*GOOD * 100, "q9 Q0  1 2.0 tag"],
    "empty tag past the sniffed head": [*GOOD * 100, "q9 Q0 d1 1 2.0 "],
    "leading space": [*GOOD, " q9 Q0 d1 1 2.0"],
    "trailing space": [*GOOD[:3], "q9 Q0 d1 1 2.0 ", *GOOD[3:]],
    "double space later": [*GOOD[:9], "q9 Q0  d1 1 2.0 tag", *GOOD[9:]],
    "missing field": [*GOOD, "q9 Q0 d1 1 2.0"],
    "extra field": [*GOOD, "q9 Q0 d1 1 2.0 tag more"],
    "tab inside a space file": [*GOOD, "q9 Q0 d1\tx 1 2.0 tag"],
    "lone CR": "\n".join([*GOOD, "q9 Q0 d\r1 1 2.0 tag"]).encode() + b"\n",
    "nan score": [*GOOD, "q9 Q0 d1 1 nan tag"],
    "infinite scores": [*GOOD, "q9 Q0 d1 1 -inf tag", "q9 Q0 d2 2 inf tag"],
    "second tag": [*GOOD, "q9 Q0 d1 1 2.0 other"],
    "text score": [*GOOD, "q9 Q0 d1 1 high tag"],
    "bad utf-8": b"\n".join([line.encode() for line in GOOD] + [b"q9 Q0 d\xff1 1 2.0 tag"]) + b"\n",
    "blocks moved": [*GOOD[4:], *GOOD[:4]],
    "ascending scores": [f"q{i // 4} Q0 d{i} {i % 4 + 1} {i % 4}.5 tag" for i in range(40)],
    "score ties, docno ascending": [f"q{i // 4} Q0 d{i % 4} {i % 4 + 1} 1.0 tag" for i in range(40)],
    "queries interleaved": [f"q{i % 3} Q0 d{i} {i + 1} {100 - i}.0 tag" for i in range(30)],
}


def _write(path: Path, content: list[str] | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else ("\n".join(content) + "\n").encode())
    return path


def _general(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trec, "read_run", lambda *a, **k: None)
    monkeypatch.setattr(trec, "read_qrels", lambda *a: False)


def _staged_run(path: Path) -> tuple[Any, ...]:
    con = duckdb.connect()
    con.execute("BEGIN TRANSACTION")  # as in a load: the fast path must never abort it
    staged, facts = stage_trec_run(con, path, "stg_results")
    sql = "SELECT line, case_id, document_id, CAST(score AS VARCHAR), tag, rank FROM stg_results ORDER BY line"
    try:
        rows = con.execute(sql).fetchall()
        con.execute("COMMIT")
    except duckdb.Error:  # a file DuckDB cannot read leaves no view (the general reader's read raised)
        rows = None
    findings = [(f.line, f.field, f.code, f.message, f.count) for f in staged.findings]
    return rows, findings, staged.rows, facts.tags, facts.depth, facts.extra_column_lines


@pytest.mark.parametrize("name", list(RUNS))
def test_a_run_stages_as_the_general_reader_stages_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "run.txt", RUNS[name])
    fast = _staged_run(path)
    _general(monkeypatch)
    assert fast == _staged_run(path)


def test_the_fast_path_reads_well_formed_files_and_gives_up_on_the_others(tmp_path: Path) -> None:
    con = duckdb.connect()
    taken = {name: trec_csv.read_run(con, _write(tmp_path / f"{i}.txt", c), f"t{i}") is not None
             for i, (name, c) in enumerate(RUNS.items())}  # fmt: skip
    assert {n for n, ok in taken.items() if ok} == {
        "plain", "tabs", "crlf", "no final newline", "six-token comment, number fifth", "blocks moved",
        "ascending scores", "second tag", "score ties, docno ascending", "queries interleaved"
    }  # fmt: skip


def test_line_numbers_hold_past_one_parallel_chunk(tmp_path: Path) -> None:
    """DuckDB reads a large file in parallel; the rows keep the file's order, so line = position."""
    lines = [f"q{i // 100:06d} Q0 d{i % 100:03d} {i % 100 + 1} {1000 - i % 100} t" for i in range(400_000)]
    path = _write(tmp_path / "big.txt", lines)
    con = duckdb.connect()
    con.execute("BEGIN TRANSACTION")
    staged, _ = stage_trec_run(con, path, "stg_results")
    bad = con.execute(
        """SELECT count(*) FROM stg_results
           WHERE case_id <> printf('q%06d', (line - 1) // 100) OR rank <> (line - 1) % 100 + 1"""
    ).fetchall()[0][0]
    assert (staged.rows, bad) == (400_000, 0)


QRELS: dict[str, list[str]] = {
    "plain": [f"q{i // 3} 0 d{i} {i % 4 - 1}" for i in range(30)],
    "comment": ["# judged by NIST", *[f"q{i // 3} 0 d{i} {i % 3}" for i in range(30)]],
    "bad grade": [f"q{i // 3} 0 d{i} {'x' if i == 7 else 1}" for i in range(30)],
    "blank line": ["q1 0 d1 1", "", "q1 0 d2 0", "q2 0 d3 2"],
    "three fields": ["q1 0 d1 1", "q1 d2 0"],
    "empty field in four columns": ["q1 0 d1 1", "q1  d2 0", "q2 0 d3 2"],
    "empty field past the sniffed head": [*[f"q{i // 3} 0 d{i} 1" for i in range(6000)], "q1  d2 0"],
}


def _staged_qrels(path: Path) -> tuple[Any, ...]:
    con = duckdb.connect()
    con.execute("BEGIN TRANSACTION")
    staged = stage_trec_qrels(con, path, "stg_labels")
    rows = con.execute("SELECT * FROM stg_labels ORDER BY line").fetchall()
    con.execute("COMMIT")
    return rows, [(f.line, f.field, f.code, f.message, f.count) for f in staged.findings], staged.rows


@pytest.mark.parametrize("name", list(QRELS))
def test_qrels_stage_as_the_general_reader_stages_them(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "qrels.txt", QRELS[name])
    fast = _staged_qrels(path)
    _general(monkeypatch)
    assert fast == _staged_qrels(path)
    con = duckdb.connect()
    taken = trec_csv.read_qrels(con, path, "t", LABEL_COLUMNS)
    assert taken == (name in ("plain", "comment"))


def test_the_hash_started_beside_the_read_is_the_files_sha256_and_a_changed_file_is_hashed_again(
    tmp_path: Path,
) -> None:
    import hashlib

    from ragtriage.contract import digest

    path = _write(tmp_path / "run.txt", GOOD)
    assert trec_csv.read_run(duckdb.connect(), path, "t") is not None  # starts the hash (digest.prefetch)
    assert digest.sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    _write(path, [*GOOD, GOOD[0]])
    assert digest.sha256_of(path) == hashlib.sha256(path.read_bytes()).hexdigest()
