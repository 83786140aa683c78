"""The one CSV writer: every CSV ragtriage writes (exports, metrics, checks, pools, compare) goes through here.

Annotators and managers open these files in a spreadsheet, and the cells hold text other people wrote. A cell
that starts like a formula would run as one (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``), so, following OWASP's
CSV-injection guidance, a string cell starting with ``=``, ``+``, ``@``, TAB, CR or LF, or with ``-`` when the
cell is not a number, or with the fullwidth forms ``＝ ＋ － ＠`` that some spreadsheets fold to ASCII, gets a
leading apostrophe. Control characters are then made visible by :mod:`ragtriage.safe_text`, so no ESC byte or
OSC sequence reaches the file. Numeric columns stay numbers.

:func:`restore_cell` undoes the apostrophe, so a file written here (a labelling pool) reads back unchanged.
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ragtriage.safe_text import FORMULA_START, NUMBER, is_string_type, needs_quote, neutralise_cell, visible_array

__all__ = ["needs_quote", "neutralise_cell", "restore_cell", "write_csv", "csv_text"]


def restore_cell(cell: str) -> str:
    """The inverse of :func:`neutralise_cell` for a cell read back from a file this module wrote."""
    if cell.startswith("'") and needs_quote(cell[1:]):
        return cell[1:]
    return cell


def restore_array(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:func:`restore_cell` over an Arrow string column (for readers of files this module wrote)."""
    if not is_string_type(column.type):
        return column
    quoted = pc.and_(
        pc.fill_null(pc.match_substring_regex(column, "^'" + FORMULA_START[1:]), False),
        pc.invert(pc.fill_null(pc.match_substring_regex(column, "^'" + NUMBER[1:]), False)),
    )
    return pc.if_else(quoted, pc.utf8_slice_codeunits(column, 1), column)


def restore_sql(column: str) -> str:
    """:func:`restore_cell` as a DuckDB SQL expression over ``column`` (for files staged in SQL, e.g. a labelled
    pool read back by ``import-labels``)."""
    formula = "'^''" + FORMULA_START[1:].replace("'", "''") + "'"
    number = "'^''" + NUMBER[1:].replace("'", "''") + "'"
    return (
        f"CASE WHEN regexp_matches({column}, {formula}) AND NOT regexp_matches({column}, {number}) "
        f"THEN substr({column}, 2) ELSE {column} END"
    )


def neutralise_array(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Control characters made visible, then formula-like cells apostrophe-led (see the module docstring)."""
    shown = visible_array(column)
    risky = pc.and_(
        pc.fill_null(pc.match_substring_regex(shown, FORMULA_START), False),
        pc.invert(pc.fill_null(pc.match_substring_regex(shown, NUMBER), False)),
    )
    if not pc.any(risky).as_py():
        return shown
    quote, empty = pa.scalar("'", shown.type), pa.scalar("", shown.type)
    return pc.if_else(risky, pc.binary_join_element_wise(quote, shown, empty), shown)


def neutralise_table(table: pa.Table) -> pa.Table:
    """Every string column of ``table`` made safe to open in a spreadsheet."""
    columns = [neutralise_array(c) if is_string_type(c.type) else c for c in table.columns]
    return pa.table(columns, names=table.column_names)


def write_csv(table: pa.Table, path: str | Path | io.IOBase) -> int:
    """Write ``table`` as UTF-8 CSV with a header row; returns the number of data rows written."""
    safe = neutralise_table(table)
    target = str(path) if isinstance(path, str | Path) else path
    pacsv.write_csv(safe, target)
    return int(safe.num_rows)


def write_csv_batches(batches: pa.RecordBatchReader, path: str | Path) -> int:
    """:func:`write_csv` of a stream of batches, one batch held at a time (the same bytes as the whole table's);
    returns the number of data rows written."""
    rows = 0
    writer: pacsv.CSVWriter | None = None
    try:
        for batch in batches:
            safe = neutralise_table(pa.Table.from_batches([batch]))
            if writer is None:
                writer = pacsv.CSVWriter(str(path), safe.schema)
            writer.write_table(safe)
            rows += safe.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:  # no batch: the header alone, as for an empty table
        write_csv(batches.schema.empty_table(), path)
    return rows


def csv_text(table: pa.Table) -> str:
    """The CSV :func:`write_csv` would write, as a string (for printing to standard output)."""
    buffer = io.BytesIO()
    write_csv(table, buffer)
    return buffer.getvalue().decode("utf-8")
