"""Read one input file into a typed DuckDB staging table, recording every type error with its line and field.

Every format goes through DuckDB's own readers, so a large file is typed in vectorised SQL, never row by row in
Python. JSONL is read one line per row (so a malformed line is reported by its number instead of aborting the
read); CSV is read as text and cast; Parquet keeps its native types and is cast where they differ.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ragtriage.contract.compression import MAX_LINE, duckdb_source, head_bytes, plain_name, text_fault
from ragtriage.contract.errors import Cause, Finding, counted_causes, has_errors, path_findings
from ragtriage.contract.fields import Field, Table

FORMATS = ("jsonl", "csv", "tsv", "parquet")
_EXT = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


@dataclass
class Staged:
    """A typed staging table and what reading it found."""

    name: str
    path: Path
    fmt: str
    rows: int
    findings: list[Finding]
    line_label: str  # "line" for text formats, "row" for Parquet


def detect_format(path: Path, override: str | None = None) -> str:
    if override:
        if override not in FORMATS:
            raise ValueError(f"unknown format {override!r}; use one of {', '.join(FORMATS)}")
        return override
    fmt = _EXT.get(Path(plain_name(path)).suffix.lower())
    if fmt is None:
        raise ValueError(f"{path}: cannot tell the format from the extension; pass --format {'|'.join(FORMATS)}")
    return fmt


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def qident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def compression_findings(path: Path) -> list[Finding]:
    """A compressed file that is truncated, corrupt or decompresses past the bound, any text file holding a NUL
    byte or a line longer than the readers take (``compression.text_fault``), as the error every reader stops
    at."""
    seen = text_fault(path)
    if seen is None or seen.fault is None:
        return []
    line, message = seen.fault
    return [Finding(str(path), line, seen.fault_field, seen.fault_code, message)]


def encoding_findings(path: Path) -> list[Finding]:
    """Empty files and byte-order marks are caught before DuckDB sees the file (looking through .gz/.bz2)."""
    f = str(path)
    unreadable = path_findings(path)
    if unreadable:
        return unreadable
    head = head_bytes(path, 4)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # before the NUL rule: the mark says why its bytes are NUL
        return [Finding(f, 1, None, "encoding", "file is UTF-16 (byte-order mark found); save it as UTF-8")]
    damaged = compression_findings(path)
    if damaged:
        return damaged
    if not head:
        return [Finding(f, None, None, "empty-file", "file is empty")]
    if head.startswith(b"\xef\xbb\xbf"):
        return [Finding(f, 1, None, "bom", "file starts with a UTF-8 byte-order mark; it was ignored", "warning")]
    return []


def _json_expr(f: Field) -> tuple[str, str]:
    """(typed value, is-bad) SQL for a field read out of a JSON object column ``j``."""
    x = f"(j->{sql_str(f.name)})"
    t = f"json_type({x})"
    txt = f"(j->>{sql_str(f.name)})"
    present = f"({x} IS NOT NULL AND {t} <> 'NULL')"
    d = f"TRY_CAST({txt} AS DOUBLE)"
    val = {
        "string": f"CASE WHEN {t} IN ('VARCHAR','BIGINT','UBIGINT') THEN {txt} END",
        "int": f"CASE WHEN {t} IN ('BIGINT','UBIGINT') THEN TRY_CAST({txt} AS BIGINT) "
        f"WHEN {t} = 'DOUBLE' AND {d} = floor({d}) THEN TRY_CAST({d} AS BIGINT) END",
        "float": f"CASE WHEN {t} IN ('BIGINT','UBIGINT','DOUBLE') THEN {d} END",
        "bool": f"CASE WHEN {t} = 'BOOLEAN' THEN TRY_CAST({txt} AS BOOLEAN) END",
        "date": f"CASE WHEN {t} = 'VARCHAR' THEN TRY_CAST({txt} AS DATE) END",
        "timestamp": f"CASE WHEN {t} = 'VARCHAR' THEN {_timestamp(txt)} END",
        "string_list": f"CASE WHEN {t} = 'ARRAY' THEN TRY_CAST({x} AS VARCHAR[]) END",
        "object": f"CASE WHEN {t} = 'OBJECT' THEN CAST({x} AS VARCHAR) END",
    }[f.kind]
    return val, f"({present} AND ({val}) IS NULL)"


def _timestamp(text: str) -> str:
    """SQL of the timestamp a text spells, with or without a time zone (one with a zone is kept in UTC)."""
    return f"coalesce(TRY_CAST({text} AS TIMESTAMP), CAST(TRY_CAST({text} AS TIMESTAMPTZ) AS TIMESTAMP))"


def trimmed(col: str) -> str:
    """SQL of ``nullif(trim(col), '')`` that copies only the values it changes. DuckDB's ``trim`` removes the
    space separators (:data:`_ZS`): U+0020 and characters beyond ASCII. A value holding neither at an end, and
    not empty, is kept as it is; the tests (first byte below ``!``, a trailing space, any character beyond ASCII)
    cost less than a trimmed copy of every id of a large run."""
    changes = f"{col} < '!' OR ends_with({col}, ' ') OR strlen({col}) <> length({col})"
    return f"CASE WHEN {changes} THEN nullif(trim({col}), '') ELSE {col} END"


def _text_expr(f: Field, col: str) -> tuple[str, str]:
    """(typed value, is-bad) SQL for a field read from a text column (CSV, or a Parquet string column)."""
    if f.kind == "string":
        return trimmed(col), "FALSE"  # any text is a string: no per-row test needed
    v = f"nullif(trim({col}), '')"
    d = f"TRY_CAST({v} AS DOUBLE)"
    val = {
        "int": f"CASE WHEN {d} = floor({d}) THEN TRY_CAST({d} AS BIGINT) END",
        "float": d,
        "bool": f"CASE WHEN lower({v}) IN ('true','1','yes','t','y') THEN TRUE "
        f"WHEN lower({v}) IN ('false','0','no','f','n') THEN FALSE END",
        "date": f"TRY_CAST({v} AS DATE)",
        "timestamp": _timestamp(v),
        "string_list": f"CASE WHEN starts_with({v}, '[') THEN (CASE WHEN json_valid({v}) THEN TRY_CAST(CAST({v} "
        f"AS JSON) AS VARCHAR[]) END) ELSE list_transform(string_split({v}, '|'), lambda s: trim(s)) END",
        "object": f"CASE WHEN json_valid({v}) AND json_type(CAST({v} AS JSON)) = 'OBJECT' THEN {v} END",
    }[f.kind]
    return val, f"({v} IS NOT NULL AND ({val}) IS NULL)"


def _native_expr(f: Field, col: str, dtype: str) -> tuple[str, str]:
    """Parquet columns already have a type: cast where it differs, fall back to the text rules for strings."""
    if dtype == "VARCHAR":
        return _text_expr(f, col)
    if f.kind == "object":
        val = f"CAST(to_json({col}) AS VARCHAR)"
        return val, "FALSE"
    if f.kind == "string_list":
        val = f"TRY_CAST({col} AS VARCHAR[])"
    elif f.kind == "string":
        val = f"CAST({col} AS VARCHAR)"
    else:
        target = {"int": "BIGINT", "float": "DOUBLE", "bool": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP"}
        val = f"TRY_CAST({col} AS {target[f.kind]})"
        if dtype in _LOSSLESS[f.kind]:  # the cast cannot fail: no value of the column to test
            return val, "FALSE"
    return val, f"({col} IS NOT NULL AND ({val}) IS NULL)"


_INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")
_LOSSLESS = {
    "int": _INTEGERS,
    "float": ("FLOAT", "DOUBLE", *_INTEGERS, "UBIGINT"),
    "bool": ("BOOLEAN",),
    "date": ("DATE",),
    "timestamp": ("TIMESTAMP",),
}
"""Parquet column types whose every value casts to the field's type (a float of any size is a DOUBLE, NaN too)."""


KIND_NAMES = {
    "string": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "date": "a date (YYYY-MM-DD)",
    "timestamp": "a timestamp (ISO 8601)",
    "string_list": "a list of strings",
    "object": "a JSON object",
}
"""What each field kind is called in a wrong-type message."""


# The general reader's longest line, and its read buffer: DuckDB's default buffer is 16 lines of the longest, 1 GiB,
# which a load under its 1 GiB memory cap (store/memory_cap.py) cannot allocate for a compressed file.
_LONG_LINES = f"max_line_size={MAX_LINE}, buffer_size={2 * MAX_LINE}"


def lines_sql(path: Path, column: str = "j") -> str:
    """Every line of a text file (decompressed) as one VARCHAR ``column`` with its 1-based ``line`` number."""
    src, comp = duckdb_source(path)
    return (
        f"SELECT row_number() OVER () AS line, {column} FROM read_csv({sql_str(str(src))}, "
        f"columns={{{sql_str(column)}: 'VARCHAR'}}, header=false, delim=chr(30), quote='', escape='', "
        f"auto_detect=false, strict_mode=false, {_LONG_LINES}, compression='{comp}')"
    )


def csv_header(path: Path, delim: str) -> list[str]:
    """The header's column names, read here rather than sniffed: DuckDB's sniffer took the widest line of a
    ragged file for the header and skipped every line above it, and read an unclosed quote as text. With the
    columns given and strict mode on, a row of another width or an unclosed quote is an error naming its line."""
    head = head_bytes(path, 1 << 20).decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        names = next(csv.reader(io.StringIO(head, newline=""), delimiter=delim), [])
    except csv.Error:  # a stray CR or quote in the header: its plain fields, and DuckDB's reader names the line
        names = head.splitlines()[0].split(delim) if head.strip() else []
    return [n.strip() or f"column{i}" for i, n in enumerate(names)] or ["column0"]


def _source_sql(path: Path, fmt: str) -> str:
    if fmt == "jsonl":
        return lines_sql(path)
    if fmt in ("csv", "tsv"):
        src, comp = duckdb_source(path)
        delim = "\t" if fmt == "tsv" else ","
        cols = ", ".join(f"{sql_str(c)}: 'VARCHAR'" for c in csv_header(path, delim))
        return (
            f"SELECT row_number() OVER () + 1 AS line, * FROM read_csv({sql_str(str(src))}, columns={{{cols}}}, "
            f"header=true, auto_detect=false, delim={sql_str(delim)}, quote='\"', escape='\"', strict_mode=true, "
            f"{_LONG_LINES}, compression='{comp}')"
        )
    p = sql_str(str(path))
    return (
        f"SELECT file_row_number + 1 AS line, * EXCLUDE (file_row_number) FROM read_parquet({p}, file_row_number=true)"
    )


def stage(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: Table,
    name: str,
    *,
    fmt: str | None = None,
    aliases: dict[str, str] | None = None,
    materialize: bool = True,
) -> Staged:
    """Create temp table ``name`` holding ``line`` plus one typed column per contract field.

    ``aliases`` maps a contract field to the column name a foreign format uses (BEIR's ``_id`` for ``id``).
    Type errors and missing required fields are returned as findings; the caller decides whether to go on.
    ``materialize=False`` makes ``name`` a typed view instead, for Parquet only: a Parquet scan is cheap enough
    that a caller reading the rows once or twice (the loader writing a run's results) should not pay for a copy.
    Text formats are always materialised, since every scan of them would parse the text again.
    """
    fmt = detect_format(path, fmt)
    fname = str(path)
    findings = encoding_findings(path)
    if has_errors(findings):
        return Staged(name, path, fmt, 0, findings, "line")
    try:
        return _stage(con, path, table, name, fmt, aliases or {}, findings, materialize or fmt != "parquet")
    except duckdb.Error as exc:
        return Staged(name, path, fmt, 0, [*findings, read_error(fname, exc)], "line")


_LINE_RE = re.compile(r"(?:Line|line):? ?(\d+)")


def read_error(fname: str, exc: duckdb.Error) -> Finding:
    """DuckDB's reader error as a finding with the line, saying what is wrong in the file's terms (its message
    speaks of "CSV Error" even for a JSONL file, and of "sniffing" for a ragged CSV)."""
    text = str(exc)
    low = text.lower()
    m = _LINE_RE.search(text)
    line = int(m.group(1)) if m else None
    if "unicode" in low or "utf-8" in low or "utf8" in low:
        return Finding(fname, line, None, "encoding", "not valid UTF-8; save the file as UTF-8")
    if "maximum line size" in low or "max_line_size" in low:
        return Finding(fname, line, None, "unreadable", "line is longer than 64 MiB")
    if "expected number of columns" in low or "too many columns" in low or "sniff" in low:
        return Finding(fname, line, None, "unreadable", "a row has a different number of columns than the header")
    if "invalid state" in low:
        return Finding(fname, line, None, "unreadable", "a stray carriage return or quote breaks the CSV layout")
    if "unterminated quote" in low:
        return Finding(fname, line, None, "unreadable", 'a quoted field is never closed (an unclosed " quote)')
    first = text.splitlines()[0] if text else type(exc).__name__
    return Finding(fname, line, None, "unreadable", f"cannot read: {first}")


def _stage(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: Table,
    name: str,
    fmt: str,
    aliases: dict[str, str],
    findings: list[Finding],
    materialize: bool,
) -> Staged:
    fname = str(path)
    raw = f"{name}__raw"
    drop_staged(con, name)
    # A view, not a table: the typed table below is the only materialisation of a large file.
    con.execute(f"CREATE OR REPLACE TEMP VIEW {raw} AS {_source_sql(path, fmt)}")
    line_label = "row" if fmt == "parquet" else "line"
    if fmt == "jsonl":
        findings += _json_line_findings(con, raw, fname)
        src = f"(SELECT line, CAST(j AS JSON) AS j FROM {raw} WHERE j IS NOT NULL AND trim(j) <> '' AND json_valid(j) AND json_type(CAST(j AS JSON)) = 'OBJECT')"  # noqa: E501
        exprs = {f.name: _json_expr(_aliased(f, aliases)) for f in table.fields}
        present = {f.name: True for f in table.fields}
    else:
        cols = {r[0]: r[1] for r in con.execute(f"DESCRIBE {raw}").fetchall()}
        src = raw
        exprs, present = {}, {}
        for f in table.fields:
            col = aliases.get(f.name, f.name)
            present[f.name] = col in cols
            if col not in cols:
                exprs[f.name] = ("NULL", "FALSE")
            elif fmt == "parquet":
                exprs[f.name] = _native_expr(f, qident(col), cols[col])
            else:
                exprs[f.name] = _text_expr(f, qident(col))
        for f in table.fields:
            if f.required and not present[f.name]:
                where = 1 if fmt != "parquet" else None
                findings.append(
                    Finding(fname, where, f.name, "missing-field", f"required column {f.name!r} is missing")
                )
    select = ["line"]
    for f in table.fields:
        val, bad = exprs[f.name]
        select.append(f"{val} AS {qident(f.name)}")
        select.append(f"{bad} AS {qident('__bad_' + f.name)}")
    if materialize:
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT {', '.join(select)} FROM {src}")
        con.execute(f"DROP VIEW {raw}")
    else:
        con.execute(f"CREATE TEMP VIEW {name} AS SELECT {', '.join(select)} FROM {src}")
    # A view's rows are checked on its source's columns: the missing test then needs no trimmed copy of each id.
    on = name if materialize else src
    tests = {
        f.name: _field_tests(f, exprs[f.name], None if materialize else aliases.get(f.name, f.name))
        for f in table.fields
        if present[f.name]
    }
    findings += type_findings(con, on, fname, table, tests, line_label)
    rows = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]  # type: ignore[index]
    if rows == 0 and not any(f.code in ("empty-file", "malformed-json") for f in findings):
        findings.append(Finding(fname, None, None, "empty-file", "file holds no rows"))
    return Staged(name, path, fmt, int(rows), findings, line_label)


def drop_staged(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop a staging table or view left by an earlier load on this connection (either kind may hold a name)."""
    kinds = con.execute(
        """SELECT 'TABLE' FROM duckdb_tables() WHERE temporary AND table_name = $1
           UNION ALL SELECT 'VIEW' FROM duckdb_views() WHERE temporary AND view_name = $1""",
        [name],
    ).fetchall()
    for (kind,) in kinds:
        con.execute(f"DROP {kind} {qident(name)}")


def _aliased(f: Field, aliases: dict[str, str]) -> Field:
    return Field(aliases[f.name], f.kind, f.required, f.enum, f.description) if f.name in aliases else f


def _json_line_findings(con: duckdb.DuckDBPyConnection, raw: str, fname: str) -> list[Finding]:
    text = "j IS NOT NULL AND trim(j) <> ''"
    causes = [
        Cause(f"{text} AND NOT json_valid(j)", "left(j, 60)", None, "malformed-json", "malformed JSON: {v}"),
        Cause(
            f"{text} AND CASE WHEN json_valid(j) THEN json_type(CAST(j AS JSON)) <> 'OBJECT' ELSE FALSE END",
            "line",
            None,
            "malformed-json",
            "a JSON object is expected on each line",
        ),
    ]
    return counted_causes(con, raw, Path(fname), causes)


_ZS = "(32, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8199, 8200, 8201, 8202, 8239, 8287, 12288)"
"""Code points DuckDB's ``trim`` removes (Unicode's space separators): a value trims to nothing only when it is
empty or starts with one of them, and each is U+0020 or at least U+00A0."""


def _field_tests(f: Field, expr: tuple[str, str], col: str | None) -> tuple[str, str]:
    """(wrong type, missing) SQL of field ``f``: over the staged table's columns when ``col`` is None, else over
    the source column ``col``, where a text value is blank without trimming every value first. Over a Parquet
    file, tests on the column itself let the reader skip every row group whose statistics rule them out."""
    val, bad = expr
    if col is None:
        bad = "FALSE" if bad == "FALSE" else qident("__bad_" + f.name)
        return bad, f"({qident(f.name)} IS NULL AND NOT {bad})"
    c = qident(col)
    if val == trimmed(c):
        # below '!' or from U+00A0 on: the first byte of every value that can trim to nothing (:data:`_ZS`), a
        # range the Parquet reader also tests on each row group's min and max, skipping the groups outside it;
        # within it, only a value starting with a space separator is trimmed (CJK or accented ids are not)
        starts = f"({c} = '' OR unicode({c}) IN {_ZS})"
        return bad, f"({c} IS NULL OR (({c} < '!' OR {c} >= chr(160)) AND {starts} AND trim({c}) = ''))"
    if bad == "FALSE":  # a value that cannot have the wrong type is missing exactly when the column is NULL
        return bad, f"{c} IS NULL"
    return bad, f"(({val}) IS NULL AND NOT {bad})"


def type_findings(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    fname: str,
    table: Table,
    tests: dict[str, tuple[str, str]],
    line_label: str,
) -> list[Finding]:
    """Every field's type and presence errors in one scan of ``relation``; rows without any build no message.
    ``tests`` holds each present field's (wrong type, missing) SQL; a field whose type cannot be wrong (a Parquet
    column of the field's own type) has FALSE, so the scan reads only the columns that can fail. One finding per
    line, the first 50 lines: ``tests/unit/test_staging_checks.py`` pins each line's finding, so this reporter is
    not ``errors.counted_causes`` (whose one finding per cause keeps five lines)."""
    hits, where = [], []
    for f in table.fields:
        if f.name not in tests:
            continue
        bad, missing = tests[f.name]
        if bad != "FALSE":
            hits.append(f"CASE WHEN {bad} THEN {{'field': {sql_str(f.name)}, 'code': 'wrong-type'}} END")
            where.append(bad)
        if f.required:
            hits.append(f"CASE WHEN {missing} THEN {{'field': {sql_str(f.name)}, 'code': 'missing-field'}} END")
            where.append(missing)
    if not hits:
        return []
    rows = con.execute(
        f"""SELECT line, h.field, h.code FROM (
                SELECT line, unnest(list_filter([{", ".join(hits)}], lambda x: x IS NOT NULL)) AS h
                FROM {relation} WHERE {" OR ".join(where)})
            ORDER BY line, h.field LIMIT 50"""
    ).fetchall()
    out = []
    for line, field, code in rows:
        spec = table.get(field)
        assert spec is not None
        if code == "wrong-type":
            msg = f"wrong type: expected {KIND_NAMES[spec.kind]}"
        else:
            msg = f"missing required field {field!r}"
        out.append(Finding(fname, int(line), field, code, msg if line_label == "line" else f"{msg} (row {line})"))
    return out
