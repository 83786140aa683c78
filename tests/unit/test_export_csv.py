"""CSV export: formula-like cells neutralised, numbers untouched, UTF-8, unknown run refused."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pytest

from ragtriage.csv_out import neutralise_table as neutralise
from ragtriage.notes import NotesStore
from ragtriage.notes.export import ExportError, export_table, write_csv
from ragtriage.store import connect


def test_neutralise_prefixes_formula_starts_only_in_strings() -> None:
    table = pa.table(
        {
            "s": ["=1+1", "+x", "-y", "@SUM(A1)", "\tz", "\rw", "plain", "a=b", None, "ünï"],
            "n": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
        }
    )
    out = neutralise(table)
    assert out.column("s").to_pylist() == [
        "'=1+1",
        "'+x",
        "'-y",
        "'@SUM(A1)",
        "␉z",  # a leading TAB or CR is made visible, so it no longer starts a formula
        "␍w",
        "plain",
        "a=b",
        None,
        "ünï",
    ]
    assert out.column("n").to_pylist()[0] == -1.5


def test_write_csv_is_utf8_and_quotes(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    n = write_csv(pa.table({"note": ['naïve, "quoted"\nline', "-3"], "k": [1, 2]}), path)
    assert n == 2
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    # the one CSV writer shows a newline as ␊ (no control byte reaches the file); "-3" is a number, not a formula
    assert rows == [{"note": 'naïve, "quoted"␊line', "k": "1"}, {"note": "-3", "k": "2"}]


def test_unknown_run_is_refused(tmp_path: Path) -> None:
    con = connect(tmp_path / "t.duckdb")
    with pytest.raises(ExportError, match="unknown run 'nope'; loaded runs: none"):
        export_table(con, NotesStore(tmp_path / "n.sqlite"), "nope")
