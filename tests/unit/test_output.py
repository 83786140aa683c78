"""The one output module: the same result in every format, hostile cells inert in each."""

from __future__ import annotations

import csv
import io
import json
import math

import pyarrow as pa
import pytest
from rich.console import Console

from ragtriage.app.render.output import Format, Output, OutputError, emit, header, markdown_cell, render

HOSTILE = "\x1b[2J[bold]x[/]=HYPERLINK(1)|\u202e"


def _out() -> Output:
    rows = pa.table(
        {
            "case_id": ["c1", HOSTILE],
            "value": [0.5, math.nan],
            "n": [3, 4],
            "tags": [["a", "b"], []],
            "evidence": ['{"k": 1}', None],
        }
    )
    worst = pa.table({"case_id": ["c1"], "diff": [-0.25]})
    return Output(
        rows,
        context={"run": "r1", "k": 10, "split": None},
        notes=["a note"],
        sections={"worst": worst},
        json_columns=("evidence",),
    )


def test_json_layout_nan_null_and_embedded_json() -> None:
    doc = json.loads(render(_out(), Format.json))
    assert doc["context"] == {"run": "r1", "k": 10, "split": None}
    assert doc["notes"] == ["a note"]
    assert doc["rows"][0] == {"case_id": "c1", "value": 0.5, "n": 3, "tags": ["a", "b"], "evidence": {"k": 1}}
    assert doc["rows"][1]["value"] is None and doc["rows"][1]["case_id"] == HOSTILE  # JSON escapes the ESC itself
    assert doc["worst"] == [{"case_id": "c1", "diff": -0.25}]


def test_csv_has_context_columns_joined_lists_and_neutral_cells() -> None:
    text = render(_out(), Format.csv)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["run", "k", "case_id", "value", "n", "tags", "evidence"]
    assert [(r["run"], r["k"], r["case_id"], r["tags"], r["n"]) for r in rows][0] == ("r1", "10", "c1", "a; b", "3")
    assert rows[1]["case_id"] == "\u241b[2J[bold]x[/]=HYPERLINK(1)|\\u202e"
    assert "\x1b" not in text


def test_csv_quotes_a_formula_cell() -> None:
    text = render(Output(pa.table({"q": ["=1+1", "-0.5"]})), Format.csv)
    assert text.splitlines() == ['"q"', '"\'=1+1"', '"-0.5"']


def test_table_shows_markup_literally_and_controls_visible() -> None:
    text = render(_out(), Format.table)
    assert "[bold]x[/]" in text and "\u241b[2J" in text and "\x1b" not in text
    assert "0.5000" in text and "nan" in text and "a, b" in text
    assert "run r1 · k 10" in text and "worst" in text and "-0.2500" in text and "a note" in text


def test_emit_table_through_a_console() -> None:
    buffer = io.StringIO()
    emit(_out(), Format.table, Console(file=buffer, width=80, color_system=None))
    assert "[bold]x[/]" in buffer.getvalue()


def test_markdown_escapes_pipes_and_markup() -> None:
    text = render(_out(), Format.markdown)
    lines = text.splitlines()
    assert lines[0] == "**run r1 · k 10**"
    assert "| case_id | value | n | tags | evidence |" in lines  # the one rule leaves emphasis marks as they are
    assert '| c1 | 0.5000 | 3 | a, b | {"k": 1} |' in lines
    hostile_row = next(line for line in lines if "HYPERLINK" in line)
    assert hostile_row.count(" | ") == 4  # the pipe inside the cell is escaped, not a column
    assert "\\[bold\\]x\\[/\\]" in hostile_row and "\x1b" not in hostile_row
    assert "- a note" in lines and "#### worst" in lines
    assert markdown_cell("a|b") == "a\\|b"
    assert markdown_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and markdown_cell("-0.5") == "-0.5"


def test_trec_layout_and_refusal() -> None:
    per_query = pa.table({"measure": ["ndcg_cut_10", "P_5"], "case_id": ["q1", "q2"], "value": [0.5, 0.2]})
    assert (
        render(Output(per_query), Format.trec)
        == "ndcg_cut_10           \tq1\t0.5000\nP_5                   \tq2\t0.2000\n"
    )
    counts = pa.table({"measure": ["num_q"], "value": pa.array([7], pa.int64())})
    assert render(Output(counts), Format.trec) == "num_q                 \tall\t7\n"
    with pytest.raises(OutputError, match="trec"):
        render(_out(), Format.trec)


def test_header_leaves_out_none_and_shows_controls() -> None:
    assert header({"run": "a\x1bb", "split": None, "ci": 0.95}) == "run a\u241bb · ci 0.95"


def test_empty_rows_say_so() -> None:
    out = Output(pa.table({"x": pa.array([], pa.int64())}), context={"run": "r"}, empty="no failures")
    assert "no failures" in render(out, Format.table)
    assert "no failures" in render(out, Format.markdown)
    assert json.loads(render(out, Format.json))["rows"] == []
