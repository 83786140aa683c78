"""OTLP/JSON with one export request per line (the OTel Collector file exporter's layout), read in blocks of whole
lines so memory is bounded by one block and the longest line (``compression.MAX_LINE``; a file with a longer line
goes to the document reader instead).

pyarrow's JSON reader parses a block straight into Arrow columns in the protobuf JSON mapping's usual types
(``intValue`` and the nanosecond times as strings, ``doubleValue`` a number); DuckDB unnests those columns into
spans without parsing any JSON. A block pyarrow refuses (a value of another JSON type, such as ``"NaN"`` as a
double or an integer written as a number, invalid UTF-8, a line that is not an object) is parsed by DuckDB's
``from_json`` instead, which takes every spelling and names the line of a bad one. Both give the same struct."""

from __future__ import annotations

import codecs
import io
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import reduce
from pathlib import Path
from typing import cast

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ragtriage.contract import compression
from ragtriage.contract.arrow_scan import run_on_arrow
from ragtriage.contract.compression import MAX_LINE, open_binary, text_fault
from ragtriage.contract.digest import Folded
from ragtriage.contract.json_stream import JsonStreamError
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces.otlp_docs import (
    DOC_PREFIXES,
    DOC_ROWS_TABLE,
    doc_rows,
    insert_doc_rows,
    odd_sql,
    pivot,
    pivoted_sql,
)

ValueSql = Callable[..., str]
"""``otlp._value_sql``: an ``AnyValue`` struct as text, given the struct's SQL and the fields its type has."""

_BLOCK = 16 << 20
_RES_STRIDE = 1 << 20  # resource numbers of one line: line * stride + position in the request
_BOM = b"\xef\xbb\xbf"
NOT_A_REQUEST = "not an OTLP export request (no resourceSpans): one file holds one format, one request per line"


def _any_value(snake: bool, rare: bool) -> pa.DataType:
    def n(camel: str) -> str:
        return "".join("_" + c.lower() if c.isupper() else c for c in camel) if snake else camel

    strings = pa.struct([(n("values"), pa.list_(pa.struct([(n("stringValue"), pa.string())])))])
    kinds = [(n("stringValue"), pa.string()), (n("intValue"), pa.string()), (n("doubleValue"), pa.float64())]
    return pa.struct(kinds + ([(n("boolValue"), pa.bool_()), (n("arrayValue"), strings)] if rare else []))


def _fields(*names: str, kind: pa.DataType | None = None) -> list[tuple[str, pa.DataType]]:
    return [(n, kind or pa.string()) for n in names]


def _request_schema(styles: tuple[bool, ...], rare: bool = True) -> pa.Schema:
    """The key styles ``styles`` (snake_case or not) in one struct at every level (as ``otlp.REQUEST_SHAPE``), so
    ``coalesce`` picks a style; ``rare``: with the values' rarer kinds (bool, array), which pyarrow builds an
    empty column for at every attribute even when no attribute has them."""

    def pick(*names: str) -> list[str]:
        return [n for i, n in enumerate(names) if (i % 2 == 1) in styles]

    value = pa.struct([(f.name, f.type) for snake in styles for f in _any_value(snake, rare)])
    kv = pa.list_(pa.struct([("key", pa.string()), ("value", value)]))
    span = pa.struct(
        _fields(*pick("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"))
        + _fields(*pick("startTimeUnixNano", "start_time_unix_nano", "endTimeUnixNano", "end_time_unix_nano"))
        + [("status", pa.struct(_fields("code", "message"))), ("attributes", kv)]
    )
    resource = pa.struct([("attributes", kv)])
    scope = pa.list_(pa.struct([("spans", pa.list_(span))]))
    rs = pa.list_(pa.struct([("resource", resource)] + [(n, scope) for n in pick("scopeSpans", "scope_spans")]))
    return pa.schema([(n, rs) for n in pick("resourceSpans", "resource_spans")])


REQUEST_SCHEMA = _request_schema((False, True))
_SCHEMAS = {(snake, rare): _request_schema((False, True) if snake else (False,), rare)
            for snake in (False, True) for rare in (False, True)}  # fmt: skip
_SNAKE_HINTS = (b'_spans"', b'_id"', b'_nano"', b'_value"')
"""How every snake_case key of the schema ends; a block with none of them (and no ``\\u00`` escape that could
spell one) is read with the camelCase keys only, which pyarrow builds in less time."""
_RARE = ("boolValue", "bool_value")
"""A value field only the schemas with the rarer kinds have."""


def _schema(data: bytearray, rare: bool) -> pa.Schema:
    # a backslash is rare and found fast: the escape's own search is several times slower
    snake = (b"\\" in data and b"\\u00" in data) or (b"_" in data and any(h in data for h in _SNAKE_HINTS))
    return _SCHEMAS[snake, rare]


class TextFault(Exception):
    """A block holding what the text scan (``compression.scan``) stops at, a NUL byte or a line that may be longer
    than ``MAX_LINE``, met by a one-pass read (``line_blocks`` with ``checked``): the file is read again the usual
    way, the scan first, which names the fault."""


def line_blocks(
    path: Path, checked: bool = False, digest: Folded | None = None
) -> Iterator[tuple[int, bytearray, int]]:
    """(number of the first line, bytes of whole lines, their line feeds) of about ``_BLOCK`` bytes each,
    decompressed. ``checked`` (a plain file the text scan has not read): each block is checked for what the scan
    would stop at (``TextFault``) before it is given out, and fed to ``digest`` if given, so the file is read once
    instead of three times."""
    line, carry = 1, b""
    with open_binary(path) as fh:
        while True:
            # the block is read into place behind the carry, and given out truncated in place: no copies of it
            data = bytearray(len(carry) + _BLOCK)
            data[: len(carry)] = carry
            got = cast(io.BufferedIOBase, fh).readinto(memoryview(data)[len(carry) :])
            del data[len(carry) + got :]
            if checked and data.find(b"\0", len(carry)) >= 0:
                raise TextFault(line)
            if digest is not None:
                digest.update(memoryview(data)[len(carry) :])
            if line == 1 and data.startswith(_BOM):
                del data[: len(_BOM)]
            if not got:
                if digest is not None:
                    digest.done()
                if data:
                    yield line, data, _feeds(data, len(data))
                return
            cut = data.rfind(b"\n") + 1
            carry = bytes(data[cut:])
            # a line longer than the scan's limit has more than that limit less a block in the carry before its
            # last read
            if checked and len(carry) > compression.MAX_LINE - _BLOCK:
                raise TextFault(line)
            if cut == 0:
                continue
            del data[cut:]
            feeds = _feeds(data, cut)
            yield line, data, feeds
            line += feeds


def _utf8(data: bytearray) -> bool:
    """Whether the block (of whole lines) is UTF-8: pyarrow's JSON reader takes invalid bytes inside a string as
    they are, so a block that is not goes to DuckDB's path, which names the line. An ASCII block is told without
    decoding."""
    if data.isascii():
        return True
    try:
        codecs.utf_8_decode(data, "strict", True)
    except UnicodeDecodeError:
        return False
    return True


_FOUND = 256
"""Line feeds looked for one by one (``find`` skips the bytes between them far faster than a count reads them)
before the rest of a block of short lines is counted by numpy (faster than ``bytes.count``)."""


def _feeds(data: bytearray, end: int) -> int:
    """The line feeds in ``data[:end]``."""
    at = -1
    for n in range(_FOUND):
        at = data.find(b"\n", at + 1, end)
        if at < 0:
            return n
    return _FOUND + int(np.count_nonzero(np.frombuffer(data, np.uint8, end - at - 1, at + 1) == 10))


def _numbers(line0: int, data: bytearray, feeds: int, rows: int) -> list[int] | None:
    """The line of each row pyarrow read (it skips blank lines); None when they do not line up."""
    n = feeds + (0 if data.endswith(b"\n") else 1)
    if n == rows:
        return list(range(line0, line0 + n))
    kept = [line0 + i for i, text in enumerate(data.split(b"\n")) if text.strip(b" \t\r")]
    return kept if len(kept) == rows else None


def _parse(line0: int, data: bytearray, feeds: int, rare: bool = False) -> tuple[pa.Table, np.ndarray] | None:
    """The block's requests and the line of each, or None when pyarrow cannot take the block as it is; ``rare``:
    with the values' rarer kinds (``_request_schema``), which a block needs only when an attribute it keeps has
    one (``_fast`` tells)."""
    if not _utf8(data):
        return None
    try:
        tbl = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=len(data) + 1),
            parse_options=pj.ParseOptions(explicit_schema=_schema(data, rare), unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    lines = _numbers(line0, data, feeds, tbl.num_rows)
    return None if lines is None else (tbl, np.asarray(lines, np.int64))


def _flatten(lists: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A list array's values, the row each came from, and each one's 1-based position in its row."""
    arr = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    values = pc.list_flatten(arr)
    parent = pc.list_parent_indices(arr).to_numpy()
    starts = arr.offsets.to_numpy()
    position = np.arange(len(values)) - (starts[parent] - starts[0]) + 1
    return values, parent, position


def _field(struct: pa.Array | pa.Table, *names: str) -> pa.Array | pa.ChunkedArray:
    """The first non-null of the fields (or columns) ``names`` that the struct (or table) has (a key in either
    style)."""
    if isinstance(struct, pa.Table):
        cols = [struct.column(n) for n in names if n in struct.column_names]
    else:
        cols = [pc.struct_field(struct, n) for n in names if n in struct.type.names]
    return cols[0] if len(cols) == 1 else pc.coalesce(*cols)


def _fast(con: duckdb.DuckDBPyConnection, path: Path, parsed: tuple[pa.Table, np.ndarray], res0: int,
          value_sql: ValueSql, keys: list[str]) -> bool:  # fmt: skip
    """Spans, the attributes ``keys``, documents and resources of a parsed block into ``trc_sp``, ``trc_kv``,
    ``trc_docs`` and ``trc_res``. False, with nothing stored, when the block was parsed without the values' rarer
    kinds and an attribute it keeps has a value of none of the kinds parsed (it may be of a kind left out)."""
    tbl, lines = parsed
    requests = _field(tbl, "resourceSpans", "resource_spans")
    if requests.null_count:
        at = pc.index(pc.is_null(requests), True).as_py()
        raise JsonStreamError(str(path), int(lines[at]), None, NOT_A_REQUEST)
    rs, rs_row, ri = _flatten(requests)
    res = res0 + lines[rs_row] * _RES_STRIDE + ri
    scopes, sc_rs, _ = _flatten(_field(rs, "scopeSpans", "scope_spans"))
    spans, sp_sc, _ = _flatten(pc.struct_field(scopes, "spans"))
    attrs, at_sp, _ = _flatten(pc.struct_field(spans, "attributes"))
    key, value = pc.struct_field(attrs, "key"), pc.struct_field(attrs, "value")
    named = pc.fill_null(pc.is_in(key, pa.array(keys, pa.string())), False)
    rs_attrs = pc.struct_field(pc.struct_field(rs, "resource"), "attributes")
    if not any(f in value.type.names for f in _RARE) and (
        _unread(value, key, named) or _unread(pc.struct_field(pc.list_flatten(rs_attrs), "value"))
    ):
        return False
    sp_rs = sc_rs[sp_sc]
    n = len(spans)
    first, last = con.execute(
        "SELECT min(s), max(s) FROM (SELECT nextval('trc_sid') AS s FROM range(?))", [n]
    ).fetchall()[0]
    if n and last - first + 1 != n:
        raise RuntimeError("span numbers were not consecutive")
    sid = np.arange(n, dtype=np.int64) + (first or 0)
    status = pc.struct_field(spans, "status")
    sp = pa.table(
        {
            "sid": sid,
            "line": lines[rs_row[sp_rs]],
            "res": res[sp_rs],
            "trace_id": _field(spans, "traceId", "trace_id"),
            "span_id": _field(spans, "spanId", "span_id"),
            "parent_id": _field(spans, "parentSpanId", "parent_span_id"),
            "start_ns": _field(spans, "startTimeUnixNano", "start_time_unix_nano"),
            "end_ns": _field(spans, "endTimeUnixNano", "end_time_unix_nano"),
            "code": pc.struct_field(status, "code"),
            "message": pc.struct_field(status, "message"),
        }
    )
    file = sql_str(str(path))
    cols = "line, res, trace_id, span_id, parent_id, start_ns, end_ns, code, message"
    run_on_arrow(con, "__trc_sp", sp, f"INSERT INTO trc_sp SELECT sid, {file}, {cols} FROM __trc_sp")
    at_sid = sid[at_sp]
    val = value_sql("value", value.type.names)
    kv = pa.table({"sid": at_sid, "key": key, "value": value}).filter(named)
    run_on_arrow(con, "__trc_kv", kv, f"INSERT INTO trc_kv SELECT sid, key, {val} FROM __trc_kv")
    docs = pivot(key, value, at_sid)
    if docs is None:
        rows = f"SELECT sid, list, i, field, {val} AS val, {odd_sql('value', value.type.names)} AS odd FROM __trc_dkv"
        run_on_arrow(con, "__trc_dkv", doc_rows(key, value, at_sid), DOC_ROWS_TABLE + rows)
        insert_doc_rows(con)
    elif docs.num_rows:
        run_on_arrow(con, "__trc_docs", docs, pivoted_sql("__trc_docs", docs.column_names))
    rsrc = pa.table({"res": res, "attributes": rs_attrs})
    entry = f"struct_pack(k := a.key, v := {value_sql('a.value', value.type.names)})"
    as_json = f"CAST(to_json(map_from_entries(list_transform(attributes, lambda a: {entry}))) AS VARCHAR)"
    run_on_arrow(con, "__trc_rs", rsrc, f"INSERT INTO trc_res SELECT res, {as_json} FROM __trc_rs")
    return True


def _unread(value: pa.Array, key: pa.Array | None = None, named: pa.Array | None = None) -> bool:
    """Whether a kept attribute's ``value`` has none of the kinds its struct has: any, without ``key`` (a
    resource's: all are kept), else one ``named`` or with a document prefix (a superset of ``OI_DOCS``)."""
    none = reduce(pc.and_, [pc.struct_field(value, f).is_null() for f in value.type.names])
    if not pc.any(none).as_py():
        return False
    if key is None or named is None:
        return True
    at = pc.filter(key, none)
    kept = reduce(pc.or_, [pc.filter(named, none)] + [pc.starts_with(at, p) for p in DOC_PREFIXES])
    return bool(pc.any(pc.fill_null(kept, False)).as_py())


def _text_lines(path: Path, line0: int, data: bytearray) -> pa.Table:
    texts = bytes(data).split(b"\n")
    if texts and not texts[-1]:
        texts.pop()
    for i, text in enumerate(texts):
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonStreamError(
                str(path), line0 + i, exc.start + 1, "the file is not UTF-8; save it as UTF-8"
            ) from exc
    return pa.table(
        {
            "line": pa.array(range(line0, line0 + len(texts)), pa.int64()),
            "t": pa.array(texts, pa.binary()).cast(pa.string()),
        }
    )


def _exact(con: duckdb.DuckDBPyConnection, path: Path, line0: int, data: bytearray, shape: str) -> None:
    """The block parsed by DuckDB into ``trc_blk (line, r)``; a line that is not a JSON object raises
    ``JsonStreamError`` naming it (checked before any insert: a failed statement would abort the load)."""
    lines = con.from_arrow(_text_lines(path, line0, data))
    not_object = "trim(t, ' \t\r') <> '' AND NOT (json_valid(t) AND starts_with(ltrim(t, ' \t'), '{'))"
    bad = lines.filter(not_object).aggregate("min(line)").fetchall()[0][0]
    if bad is not None:
        raise JsonStreamError(str(path), int(bad), None, "not a JSON object (an OTLP export request per line)")
    lines.query(
        "__trc_lines",
        f"""CREATE OR REPLACE TEMP TABLE trc_blk AS
            SELECT line, from_json(t, {sql_str(shape)}) AS r FROM __trc_lines WHERE trim(t, ' \t\r') <> ''""",
    )
    other = "r.resourceSpans IS NULL AND r.resource_spans IS NULL"
    bad = con.execute(f"SELECT min(line) FROM trc_blk WHERE {other}").fetchall()[0][0]
    if bad is not None:
        con.execute("DROP TABLE trc_blk")
        raise JsonStreamError(str(path), int(bad), None, NOT_A_REQUEST)


def _unnest(con: duckdb.DuckDBPyConnection, path: Path, blk: str, res0: int, value_sql: str) -> None:
    """The spans and resources of the requests in ``blk (line, r)`` into ``trc_span`` and ``trc_res``."""
    rs = "coalesce(r.resourceSpans, r.resource_spans)"
    res = f"{int(res0)} + line * {_RES_STRIDE} + ri"
    requests = f"SELECT line, {res} AS res, rs FROM (SELECT line, unnest({rs}) AS rs, generate_subscripts({rs}, 1) AS ri FROM {blk})"  # noqa: E501
    con.execute(
        f"""INSERT INTO trc_span (file, line, res, s)
            SELECT {sql_str(str(path))}, line, res, unnest(ss.spans)
            FROM (SELECT line, res, unnest(coalesce(rs.scopeSpans, rs.scope_spans)) AS ss FROM ({requests}))"""
    )
    entry = f"struct_pack(k := a.key, v := {value_sql})"
    con.execute(
        f"""INSERT INTO trc_res
            SELECT res, CAST(to_json(map_from_entries(list_transform(rs.resource.attributes, lambda a: {entry})))
                             AS VARCHAR)
            FROM ({requests})"""
    )


def _parsed_blocks(
    path: Path, checked: bool, digest: Folded | None, rare: list[bool]
) -> Iterator[tuple[int, bytearray, int, tuple[pa.Table, np.ndarray] | None]]:
    """``line_blocks`` with pyarrow's parse of each (``_parse``, with the rarer kinds once ``rare[0]`` is set); the
    next block is parsed in a thread while the caller stores this one (pyarrow and DuckDB both work outside the
    GIL), which shortens the load, not its CPU."""
    with ThreadPoolExecutor(1) as pool:
        ahead: tuple[tuple[int, bytearray, int], Future[tuple[pa.Table, np.ndarray] | None]] | None = None
        for block in line_blocks(path, checked, digest):
            parsing = pool.submit(_parse, *block, rare=True) if rare[0] else pool.submit(_parse, *block)
            if ahead is not None:
                yield *ahead[0], ahead[1].result()
            ahead = (block, parsing)
        if ahead is not None:
            yield *ahead[0], ahead[1].result()


def read_lines(con: duckdb.DuckDBPyConnection, path: Path, res0: int, shape: str, value_sql: ValueSql,
               keys: list[str], checked: bool = False, digest: Folded | None = None) -> int:  # fmt: skip
    """Append a file of one request per line to ``trc_sp``/``trc_kv``/``trc_res`` (blocks pyarrow parses) and
    ``trc_span`` (blocks DuckDB parses); returns the last resource number used. ``shape`` is the request as
    ``from_json`` reads it, ``value_sql`` an attribute value ``a.value`` as text, ``keys`` the attributes kept;
    ``checked`` and ``digest`` as ``line_blocks`` takes them."""
    last, rare = 0, [False]
    for line0, data, feeds, parsed in _parsed_blocks(path, checked, digest, rare):
        last = line0 + feeds
        if parsed is not None and not _fast(con, path, parsed, res0, value_sql, keys):
            rare[0] = True  # the file has them: its next blocks are parsed with them from the start
            parsed = _parse(line0, data, feeds, rare=True)
            if parsed is not None and not _fast(con, path, parsed, res0, value_sql, keys):
                raise RuntimeError("a block parsed with every kind of value was taken as lacking one")
        if parsed is None:
            _exact(con, path, line0, data, shape)
            _unnest(con, path, "trc_blk", res0, value_sql("a.value"))
            con.execute("DROP TABLE trc_blk")
    return int(res0) + (last + 1) * _RES_STRIDE


def longest_line_fits(path: Path) -> bool:
    """Whether every line of ``path`` is at most ``MAX_LINE`` bytes (else the document reader streams it)."""
    seen = text_fault(path)
    return seen is None or seen.fault is None or not seen.fault[1].startswith("line longer than")


__all__ = ["MAX_LINE", "REQUEST_SCHEMA", "TextFault", "line_blocks", "longest_line_fits", "read_lines"]
