"""The one sanitiser and the one CSV writer, on the hostile strings of the threat model."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from ragtriage.csv_out import csv_text, needs_quote, restore_array, restore_cell, write_csv
from ragtriage.safe_text import has_controls, visible, visible_table

HOSTILE = [
    "\x1b[2Jcleared",
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1b]52;c;ZXZpbA==\x07",
    "abc\u202edef",
    "[bold]x[/]",
    "line1\nline2\r",
    "\x9bcsi",
    "del\x7f",
]


def test_visible_makes_every_control_visible() -> None:
    assert visible("\x1b[2Jcleared") == "\u241b[2Jcleared"
    assert visible("abc\u202edef") == "abc\\u202edef"
    assert visible("\x9bcsi") == "\\x9bcsi"
    assert visible("del\x7f") == "del\u2421"
    assert visible("a\nb\tc") == "a\u240ab\u2409c"
    assert visible("a\nb\tc\rd", keep_newlines=True) == "a\nb\tc\u240dd"
    assert visible("[bold]x[/]") == "[bold]x[/]"  # markup is the surface's job, not a control
    assert visible(None) == ""
    assert visible(3) == "3"
    for text in HOSTILE:
        shown = visible(text)
        assert not has_controls(shown)
        assert "\x1b" not in shown


def test_visible_table_matches_scalar_for_every_string_type() -> None:
    for kind in (pa.string(), pa.large_string(), pa.string_view()):
        table = pa.table({"s": pa.array([*HOSTILE, None], kind), "n": list(range(len(HOSTILE) + 1))})
        shown = visible_table(table)
        assert shown.column("s").to_pylist() == [visible(t) for t in HOSTILE] + [None]
        assert shown.column("n").to_pylist() == list(range(len(HOSTILE) + 1))


@pytest.mark.parametrize(
    ("cell", "quoted"),
    [
        ('=HYPERLINK("http://x")', True),
        ("=cmd|' /C calc'!A0", True),
        ("+1+1", True),
        ("-2+3", True),
        ("-0.5", False),
        ("+3", False),
        ("1e-3", False),
        ("@SUM(A1)", True),
        ("\tTAB", True),
        ("\rCR", True),
        ("\nLF", True),
        ("\uff1d1+1", True),
        ("\uff0b1", True),
        ("\uff0dx", True),
        ("\uff20x", True),
        ("plain", False),
        ("a=b", False),
        ("", False),
    ],
)
def test_formula_cells(cell: str, quoted: bool) -> None:
    assert needs_quote(cell) is quoted
    if quoted:
        assert restore_cell("'" + cell) == cell
    assert restore_cell(cell) == cell


def test_write_csv_neutralises_and_round_trips(tmp_path) -> None:
    cells = ["=1+1", "-0.5", "\x1b[2J", "\nled", "\uff1dx", "ok", None]
    table = pa.table(
        {
            "a": pa.array(cells, pa.string()),
            "b": pa.array(cells, pa.large_string()),
            "c": pa.array(cells, pa.string_view()),
            "x": pa.array([1.5, -2.0, 3.0, 4.0, 5.0, 6.0, 7.0]),
        }
    )
    path = tmp_path / "out.csv"
    assert write_csv(table, path) == 7
    raw = path.read_bytes()
    assert b"\x1b" not in raw
    back = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    for name in ("a", "b", "c"):
        col = back.column(name).to_pylist()
        assert col[0] == "'=1+1"
        assert col[1] == "-0.5"
        assert col[2] == "\u241b[2J"
        assert col[3] == "\u240aled"  # the LF is made visible, so the cell no longer starts a formula line
        assert col[4] == "'\uff1dx"
        assert restore_array(back.column(name)).to_pylist()[0] == "=1+1"
    assert back.column("x").to_pylist() == [1.5, -2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    # no cell of the file starts with a formula character
    for row in pacsv.read_csv(io.BytesIO(csv_text(table).encode())).to_pylist():
        for value in row.values():
            assert not (isinstance(value, str) and needs_quote(value))
