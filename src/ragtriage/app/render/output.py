"""The one output module: every command's result is printed as table, json, csv, markdown or trec from here.

A command computes an :class:`Output` (Arrow rows, a context header, notes, optional named sections) and calls
:func:`emit`; it never writes a format switch of its own. So every command gets every format, untrusted text is
handled in one place (``ragtriage.safe_text`` for what a person reads, ``ragtriage.csv_out`` for CSV, no rich
markup interpreted), and a new command adds rows, not a writer.

Layouts (the same for every command):

- ``table``: the context as a title line, the rows as a rich table (floats to 4 decimals), each section as a
  further titled table, then the notes.
- ``json``: ``{"context": {...}, "notes": [...], "rows": [...], <section>: [...]}``, one row object per line,
  streamed in batches (``_json_chunks``); NaN is ``null``; columns named in ``json_columns`` hold JSON text and
  are embedded parsed.
- ``csv``: the rows only, with the context's scalar values as leading columns (a CSV row must say its run, k
  and threshold), through :func:`ragtriage.csv_out.csv_text`; list cells joined with ``"; "``.
- ``markdown``: the context in bold, a pipe table per part, notes as a list; cells through ``safe_text.markdown_cell``.
- ``trec``: trec_eval's ``measure<TAB>query<TAB>value`` lines, for rows with ``measure``/``value`` columns
  (and ``case_id``; ``all`` when absent); other results refuse it with :class:`OutputError`.

Heavy modules (pyarrow, rich) are imported inside the functions so that a CLI module can import :class:`Format`
at start-up for free.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragtriage.app.render import Format, Output, OutputError
from ragtriage.safe_text import markdown_cell

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.console import Console

__all__ = ["Format", "Output", "OutputError", "emit", "header", "markdown_cell", "print_grid", "render", "trec_text"]


def header(context: Mapping[str, Any]) -> str:
    """``run r1 · stage final · k 10``: the context on one line (None values left out)."""
    from ragtriage.safe_text import visible

    return " · ".join(f"{visible(k)} {visible(_scalar_text(v))}" for k, v in context.items() if v is not None)


def render(out: Output, fmt: Format) -> str:
    """``out`` as text in ``fmt`` (the table format without colour, as a file or pipe receives it)."""
    if fmt is Format.json:
        return _json(out)
    if fmt is Format.csv:
        return _csv(out)
    if fmt is Format.markdown:
        return _markdown(out)
    if fmt is Format.trec:
        return _trec(out)
    import io

    from rich.console import Console

    buffer = io.StringIO()
    _print_table(out, Console(file=buffer, soft_wrap=True, width=120, color_system=None))
    return buffer.getvalue()


def emit(out: Output, fmt: Format, console: Console | None = None) -> None:
    """Print ``out`` to standard output in ``fmt``; the table format goes through rich (colour on a terminal)."""
    if fmt is Format.table:
        from rich.console import Console

        _print_table(out, console or Console(soft_wrap=True))
        return
    import sys

    for chunk in _json_chunks(out) if fmt is Format.json else [render(out, fmt)]:
        sys.stdout.write(chunk)
    sys.stdout.flush()


# ---------------------------------------------------------------- cells


def _scalar_text(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    if isinstance(v, Mapping):
        return ", ".join(f"{k} {_scalar_text(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        return ", ".join(_scalar_text(x) for x in v)
    return str(v)


def _flat(table: pa.Table, sep: str) -> pa.Table:
    """List columns joined with ``sep`` into one string cell (a CSV or table cell holds one value)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, kind in enumerate(table.schema.types):
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            joined = pc.binary_join(table.column(i).cast(pa.list_(pa.string())), sep)
            table = table.set_column(i, table.column_names[i], joined)
    return table


def _text_columns(table: pa.Table) -> list[list[str]]:
    """Every cell as display text: floats to 4 decimals, None empty, controls made visible."""
    import pyarrow as pa

    from ragtriage.safe_text import visible

    table = _flat(table, ", ")
    columns: list[list[str]] = []
    for col in table.columns:
        values = col.to_pylist()
        if pa.types.is_floating(col.type):
            columns.append(["" if v is None else "nan" if math.isnan(v) else f"{v:.4f}" for v in values])
        else:
            columns.append([visible(v) for v in values])
    return columns


def _cells(table: pa.Table) -> list[list[str]]:
    columns = _text_columns(table)
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


# ---------------------------------------------------------------- table


def _print_table(out: Output, console: Console) -> None:
    from rich.text import Text

    from ragtriage.safe_text import visible

    parts = [(out.title or header(out.context), out.shown if out.shown is not None else out.rows)]
    if out.title and out.context:
        console.print(Text(header(out.context)), soft_wrap=not _fits(console))
    parts += list(out.sections.items())
    for i, (title, table) in enumerate(parts):
        if i == 0 and table.num_rows == 0:
            if title:
                console.print(Text(title), soft_wrap=not _fits(console))
            console.print(Text(out.empty))
            continue
        if table.num_rows == 0:
            continue
        numeric = [_is_number(t) for t in table.schema.types]
        print_grid(
            console, visible(title) if title else None, [visible(c) for c in table.column_names], _cells(table), numeric
        )
    for note in out.notes:
        console.print(Text(visible(note)), soft_wrap=not _fits(console))


def _is_number(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind))


def _fits(console: Console) -> bool:
    """Whether prose is folded to the console's width: when that width is the reader's (a terminal, or COLUMNS
    set); a pipe without COLUMNS keeps each header and note on one line, so grep and head see them whole."""
    import os

    return bool(console.is_terminal or os.environ.get("COLUMNS"))


TEXT_MIN = 16  # a text column is folded down to its longest word, or to this many characters


def print_grid(
    console: Console,
    title: str | None,
    names: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Sequence[bool] | None = None,
) -> None:
    """The one table writer of every command: a rich table as wide as the console, figures (``numeric``
    columns, else cells that read as one) never wrapped nor cut, text folded; when even the narrowest layout is
    wider than the console, one record per block (``name: value`` lines), so no line outgrows the terminal and
    no number is cut. ``names`` and ``rows`` are display text already (``safe_text.visible``)."""
    from rich.measure import Measurement
    from rich.text import Text

    figures = (
        list(numeric) if numeric is not None else [all(_reads_as_number(r[j]) for r in rows) for j in range(len(names))]
    )
    if title:  # prose above the table: folded as every header is (``_fits``), not to the table's width
        console.print(Text(title), soft_wrap=not _fits(console))
    if not _fits(console):  # a pipe without COLUMNS: the whole boxed table, nothing folded, as wide as it needs
        from rich.console import Console

        grid = _grid(names, rows, figures, False)
        need = Measurement.get(console, console.options.update_width(1 << 20), grid).maximum
        target = console if need <= console.width else Console(file=console.file, soft_wrap=True, width=need)
        target.print(grid, soft_wrap=False)
        return
    for compact in (False, True):  # boxed; else a rule under the header, one space between columns
        grid = _grid(names, rows, figures, compact)
        if Measurement.get(console, console.options.update_width(1 << 20), grid).minimum <= console.width:
            console.print(grid, soft_wrap=False)
            return
    wide = max(len(n) for n in names)
    for row in rows:
        for name, cell in zip(names, row, strict=True):
            line = Text(f"{name:<{wide}}  ", style="bold")
            line.append(cell)
            console.print(line, soft_wrap=False, overflow="fold")
        console.print()


def _grid(names: Sequence[str], rows: Sequence[Sequence[str]], figures: Sequence[bool], compact: bool) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    grid = Table(header_style="bold")
    if compact:
        grid.box, grid.show_edge, grid.padding = box.SIMPLE_HEAD, False, (0, 0)
    for j, (name, figure) in enumerate(zip(names, figures, strict=True)):
        if figure:
            grid.add_column(Text(name), no_wrap=True, justify="right", min_width=len(name))
        else:  # folded, yet never narrower than its longest word (up to a limit): "nDCG@10" stays whole
            word = max([len(w) for r in rows for w in r[j].split()] + [len(name)])
            grid.add_column(Text(name), overflow="fold", min_width=min(word, TEXT_MIN))
    for row in rows:
        grid.add_row(*(Text(c) for c in row))
    return grid


def _reads_as_number(cell: str) -> bool:
    text = cell.strip().lstrip("+-[").rstrip("]%").replace(",", "").replace("/", "").replace(".", "")
    return not text or text.isdigit()


# ---------------------------------------------------------------- json


_JSON_BATCH = 65_536  # rows turned into JSON text at a time: memory stays bounded at millions of rows


def _json_row_batches(table: pa.Table, json_columns: Sequence[str]) -> Iterator[list[str]]:
    """Each row as one compact JSON object, a batch of rows at a time, written by DuckDB's ``to_json``: a
    million-row result never becomes a million Python dicts (as ``to_pylist`` would make it). NaN is null;
    ``json_columns`` hold JSON text and are embedded parsed."""
    import duckdb
    import pyarrow as pa

    fields = []
    for f in table.schema:
        col = '"' + f.name.replace('"', '""') + '"'
        if f.name in json_columns:
            value = f"json({col})"
        elif pa.types.is_floating(f.type):
            value = f"CASE WHEN isnan({col}) THEN NULL ELSE {col} END"
        else:
            value = col
        fields.append(f"{col} := {value}")
    con = duckdb.connect()
    try:
        for batch in table.to_batches(max_chunksize=_JSON_BATCH):
            con.register("_batch", pa.Table.from_batches([batch], schema=table.schema))
            rows = con.execute(f"SELECT to_json(struct_pack({', '.join(fields)})) FROM _batch").fetchall()
            yield [r[0] for r in rows]
            con.unregister("_batch")
    finally:
        con.close()


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, Mapping):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_value(x) for x in v]
    return v


def _json_chunks(out: Output) -> Iterator[str]:
    """The JSON document in pieces: the context and notes indented as ``json.dumps(indent=2)`` writes them,
    each table an array with one compact row object per line."""

    def small(value: Any) -> str:
        text = json.dumps(_json_value(value), indent=2, ensure_ascii=False, default=str)
        return text.replace("\n", "\n  ")  # nested one level deeper than json.dumps puts it

    yield "{\n"
    yield f'  "context": {small(dict(out.context))},\n'
    yield f'  "notes": {small(list(out.notes))}'
    for name, table in [("rows", out.rows), *out.sections.items()]:
        yield f",\n  {json.dumps(name, ensure_ascii=False)}: ["
        first = True
        for rows in _json_row_batches(table, out.json_columns):
            if rows:
                yield ("\n    " if first else ",\n    ") + ",\n    ".join(rows)
                first = False
        yield "]" if first else "\n  ]"
    yield "\n}\n"


def _json(out: Output) -> str:
    return "".join(_json_chunks(out))


# ---------------------------------------------------------------- csv


def _csv(out: Output) -> str:
    import pyarrow as pa

    from ragtriage.csv_out import csv_text

    table = _flat(out.rows, "; ")
    scalars = [(k, v) for k, v in out.context.items() if v is not None and not isinstance(v, Mapping | list | tuple)]
    for name, value in reversed(scalars):
        if name not in table.column_names:
            table = table.add_column(0, name, pa.array([_scalar_text(value)] * table.num_rows, pa.string()))
    return csv_text(table)


# ---------------------------------------------------------------- markdown


def _md_table(table: pa.Table) -> list[str]:
    names = [markdown_cell(c) for c in table.column_names]
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in _cells(table)]
    return lines


def _markdown(out: Output) -> str:
    lines: list[str] = []
    head = header(out.context)
    if out.title:
        lines += [f"### {markdown_cell(out.title)}", ""]
    if head:
        lines += [f"**{markdown_cell(head)}**", ""]
    main = out.shown if out.shown is not None else out.rows
    lines += _md_table(main) if main.num_rows else [markdown_cell(out.empty)]
    for name, table in out.sections.items():
        if table.num_rows:
            lines += ["", f"#### {markdown_cell(name)}", "", *_md_table(table)]
    if out.notes:
        lines += ["", *(f"- {markdown_cell(n)}" for n in out.notes)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- trec


_TREC_LINE = """CASE WHEN integer THEN printf('%-22s\t%s\t%d', measure, qid, CAST(round(value) AS BIGINT))
                ELSE printf('%-22s\t%s\t%6.4f', measure, qid, value) END"""


def _trec(out: Output) -> str:
    """trec_eval's layout (``%-22s\t%s\t%6.4f``), so scripts that parse trec_eval's output read ours unchanged."""
    names = out.rows.column_names
    if "measure" not in names or "value" not in names:
        raise OutputError("--format trec writes trec_eval's measure/query/value lines; use it with `metrics`")
    return trec_text(out.rows)


def trec_text(rows: pa.Table) -> str:
    """``measure<TAB>qid|all<TAB>value`` per row in order: the name left-aligned in 22 characters, counts as
    integers (``integer`` column, else when ``value`` is an integer column), every other value with four decimals.
    A NULL ``case_id`` (or none) is ``all``; a NULL value (undefined for a query) prints as trec_eval's 0. Query
    ids are made visible so a line stays one line; DuckDB's ``printf`` formats the whole table, no loop per query."""
    import duckdb
    import pyarrow as pa

    from ragtriage.safe_text import visible_array

    names = rows.column_names
    n = rows.num_rows
    qid = visible_array(rows.column("case_id")) if "case_id" in names else pa.nulls(n, pa.string())
    measure = visible_array(rows.column("measure").cast(pa.string()))
    columns, labels = [measure, qid, rows.column("value").cast(pa.float64())], ["measure", "qid", "value"]
    if "integer" in names:
        columns, labels = [*columns, rows.column("integer")], [*labels, "integer"]
    integer = "integer" if "integer" in names else str(pa.types.is_integer(rows["value"].type)).upper()
    # built from Arrow columns only (no Python values): pyarrow's constructors from Python import pandas
    table = pa.table(columns, names=labels)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    try:
        con.register("_rows", table)
        row = con.execute(
            f"""SELECT string_agg({_TREC_LINE}, chr(10) ORDER BY i) || chr(10)
                FROM (SELECT row_number() OVER () AS i, measure, coalesce(qid, 'all') AS qid,
                             coalesce(value, 0.0) AS value, {integer} AS integer
                      FROM _rows)"""
        ).fetchone()
        return str(row[0]) if row and row[0] is not None else ""
    finally:
        con.close()
