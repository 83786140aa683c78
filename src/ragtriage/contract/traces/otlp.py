"""OTLP/JSON export requests (``resourceSpans`` -> ``scopeSpans`` -> ``spans``), camelCase or snake_case, one
request per file or one per line (the OTel Collector file exporter), plain or compressed, read by one path.

Framing: a file of one request per line is read in blocks of whole lines (``line_blocks``), so memory is bounded
by one block and the longest line (``compression.MAX_LINE``); any other file (a pretty-printed request, a line
past that limit) is walked a container at a time by ``contract.json_stream`` (``_Walk``), each span framed as a
one-span request on a line of its own and each resource as a request of its own, so memory is bounded by one
batch of spans and the largest single span.

Parsing: pyarrow's JSON reader parses a block straight into Arrow columns in the protobuf JSON mapping's usual
types (``intValue`` and the nanosecond times as strings, ``doubleValue`` a number). A block pyarrow refuses (a
value of another JSON type, such as ``"NaN"`` as a double or an integer written as a number, invalid UTF-8, a line
that is not an object) is parsed by DuckDB's ``from_json`` instead, which takes every spelling and names the line
of a bad one. Both give the same struct, and one mapping (``_fast``) takes it from there: spans, the attributes a
span is read by (OpenInference's ``openinference.span.kind``, ``input.value``, ``reranker.*``; OTel GenAI's
``gen_ai.operation.name = retrieval``, ``gen_ai.retrieval.query.text``, ``gen_ai.retrieval.documents``), the
documents (``otlp_docs``) and the resources; ``normalise_otlp`` pivots the attributes into spans in SQL.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Callable, Collection, Iterator
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
from ragtriage.contract.compression import MAX_LINE, compression_of, open_binary, text_fault
from ragtriage.contract.digest import Folded, folded
from ragtriage.contract.errors import path_findings
from ragtriage.contract.json_stream import JsonStream, JsonStreamError, bounded_loads, json_stream
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces.options import TraceOptions, json_path
from ragtriage.contract.traces.otlp_docs import DOC_PREFIXES, drop_unkept, insert_docs, odd_sql
from ragtriage.contract.traces.tables import list_docs

_BATCH = 20_000
_BLOCK = 16 << 20
_RES_STRIDE = 1 << 20  # resource numbers of one line: line * stride + position in the request
_BOM = b"\xef\xbb\xbf"
_RESOURCE = ("resourceSpans", "resource_spans")
_SCOPE = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans")
_SCALARS = (
    "stringValue",
    "string_value",
    "intValue",
    "int_value",
    "doubleValue",
    "double_value",
    "boolValue",
    "bool_value",
)
NOT_A_REQUEST = "not an OTLP export request (no resourceSpans): one file holds one format, one request per line"


def is_otlp(head: str) -> bool:
    return any(f'"{k}"' in head for k in _RESOURCE)


def _any_value(snake: bool, rare: bool) -> pa.DataType:
    def n(camel: str) -> str:
        return "".join("_" + c.lower() if c.isupper() else c for c in camel) if snake else camel

    strings = pa.struct([(n("values"), pa.list_(pa.struct([(n("stringValue"), pa.string())])))])
    keys = pa.struct([(n("values"), pa.list_(pa.struct([("key", pa.string())])))])
    kinds = [(n("stringValue"), pa.string()), (n("intValue"), pa.string()), (n("doubleValue"), pa.float64())]
    rarer = [(n("boolValue"), pa.bool_()), (n("arrayValue"), strings), (n("kvlistValue"), keys)]
    return pa.struct(kinds + (rarer if rare else []))


def _fields(*names: str) -> list[tuple[str, pa.DataType]]:
    return [(n, pa.string()) for n in names]


def _request_schema(styles: tuple[bool, ...], rare: bool = True) -> pa.Schema:
    """The key styles ``styles`` (snake_case or not) in one struct at every level (as ``REQUEST_SHAPE``), so
    ``coalesce`` picks a style; ``rare``: with the values' rarer kinds (bool, array, key-value list), which pyarrow
    builds an empty column for at every attribute even when no attribute has them."""

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


_ANY = (
    "{"
    + ", ".join(f'"{k}": "VARCHAR"' for k in _SCALARS)
    + "".join(
        f', "{a}": {{"values": [{{"{s}": "VARCHAR"}}]}}, "{k}": {{"values": [{{"key": "VARCHAR"}}]}}'
        for a, s, k in (("arrayValue", "stringValue", "kvlistValue"), ("array_value", "string_value", "kvlist_value"))
    )
    + "}"
)
_KV = '[{"key": "VARCHAR", "value": ' + _ANY + "}]"
_SPAN_SHAPE = (
    '{"traceId": "VARCHAR", "trace_id": "VARCHAR", "spanId": "VARCHAR", "span_id": "VARCHAR", '
    '"parentSpanId": "VARCHAR", "parent_span_id": "VARCHAR", "startTimeUnixNano": "VARCHAR", '
    '"start_time_unix_nano": "VARCHAR", "endTimeUnixNano": "VARCHAR", "end_time_unix_nano": "VARCHAR", '
    '"status": {"code": "VARCHAR", "message": "VARCHAR"}, "attributes": ' + _KV + "}"
)
_RS_SHAPE = (
    f'{{"resource": {{"attributes": {_KV}}}, "scopeSpans": [{{"spans": [{_SPAN_SHAPE}]}}], '
    f'"scope_spans": [{{"spans": [{_SPAN_SHAPE}]}}]}}'
)
REQUEST_SHAPE = f'{{"resourceSpans": [{_RS_SHAPE}], "resource_spans": [{_RS_SHAPE}]}}'
"""A request as DuckDB parses it (``from_json``): both key styles, every attribute value as text."""


def _value_sql(v: str, fields: Collection[str]) -> str:
    """An ``AnyValue`` struct ``v`` as text (an array as the JSON list of its strings); ``fields`` are those its
    type has (a style's, or both)."""
    scalars = [f"CAST({v}.{k} AS VARCHAR)" for k in _SCALARS if k in fields]
    arrays = [
        f'list_transform({v}.{a}."values", lambda x: x.{s})'
        for a, s in (("arrayValue", "stringValue"), ("array_value", "string_value"))
        if a in fields
    ]
    as_json = f"CAST(to_json(coalesce({', '.join(arrays)})) AS VARCHAR)" if arrays else None
    return f"coalesce({', '.join(scalars + ([as_json] if as_json else []))})"


def _kind_sql(v: str, fields: Collection[str]) -> str:
    """SQL: the kind of an ``AnyValue`` struct ``v`` that is no single id (what ``odd_sql`` names, or a double),
    else NULL: a principal must be one id, a string or an integer."""
    doubles = " OR ".join(f"{v}.{k} IS NOT NULL" for k in ("doubleValue", "double_value") if k in fields)
    return f"coalesce({odd_sql(v, fields)}, CASE WHEN {doubles} THEN 'a double' END)" if doubles else odd_sql(v, fields)


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


def _arrow(data: bytearray, rare: bool) -> pa.Table | None:
    """pyarrow's parse of a block of requests, one per line; None when it cannot take the block as it is."""
    if not _utf8(data):
        return None
    try:
        return pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(block_size=len(data) + 1),
            parse_options=pj.ParseOptions(explicit_schema=_schema(data, rare), unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _parse(line0: int, data: bytearray, feeds: int, rare: bool = False) -> tuple[pa.Table, np.ndarray] | None:
    """A block of lines' requests and the line of each, or None when pyarrow cannot take the block as it is;
    ``rare``: with the values' rarer kinds (``_request_schema``), which a block needs only when an attribute it
    keeps has one (``_fast`` tells)."""
    tbl = _arrow(data, rare)
    lines = None if tbl is None else _numbers(line0, data, feeds, tbl.num_rows)
    return None if tbl is None or lines is None else (tbl, np.asarray(lines, np.int64))


def _exact(
    con: duckdb.DuckDBPyConnection, path: Path, texts: list[bytes], lines: np.ndarray
) -> tuple[pa.Table, np.ndarray]:
    """The requests ``texts`` (one per line, at ``lines``) parsed by DuckDB, and the position of each in
    ``texts`` (blank lines have none); a line that is not a JSON object raises ``JsonStreamError`` naming it."""
    for i, text in enumerate(texts):
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonStreamError(
                str(path), int(lines[i]), exc.start + 1, "the file is not UTF-8; save it as UTF-8"
            ) from exc
    rel = con.from_arrow(pa.table({"i": np.arange(len(texts)), "t": pa.array(texts, pa.binary()).cast(pa.string())}))
    not_object = "trim(t, ' \t\r') <> '' AND NOT (json_valid(t) AND starts_with(ltrim(t, ' \t'), '{'))"
    bad = rel.filter(not_object).aggregate("min(i)").fetchall()[0][0]
    if bad is not None:
        raise JsonStreamError(str(path), int(lines[bad]), None, "not a JSON object (an OTLP export request per line)")
    tbl = rel.filter("trim(t, ' \t\r') <> ''").select(f"i, from_json(t, {sql_str(REQUEST_SHAPE)}) AS r")
    tbl = tbl.select("i, r.resourceSpans, r.resource_spans").order("i").to_arrow_table()
    other = pc.and_(pc.is_null(tbl.column("resourceSpans")), pc.is_null(tbl.column("resource_spans")))
    if pc.any(other).as_py():
        at = tbl.column("i")[pc.index(other, True).as_py()].as_py()
        raise JsonStreamError(str(path), int(lines[at]), None, NOT_A_REQUEST)
    return tbl.drop(["i"]), tbl.column("i").to_numpy()


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


def _fast(con: duckdb.DuckDBPyConnection, path: Path, tbl: pa.Table, lines: np.ndarray, base: np.ndarray,
          keys: list[str]) -> bool:  # fmt: skip
    """Spans, the attributes ``keys``, documents and resources of a parsed block (a request per row, at ``lines``,
    its resources numbered from ``base``) into ``trc_sp``, ``trc_kv``, ``trc_docs`` and ``trc_res``. False, with
    nothing stored, when the block was parsed without the values' rarer kinds and an attribute it keeps has a
    value of none of the kinds parsed (it may be of a kind left out)."""
    requests = _field(tbl, "resourceSpans", "resource_spans")
    if requests.null_count:
        at = pc.index(pc.is_null(requests), True).as_py()
        raise JsonStreamError(str(path), int(lines[at]), None, NOT_A_REQUEST)
    rs, rs_row, ri = _flatten(requests)
    res = base[rs_row] + ri
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
    names = value.type.names
    val = _value_sql("value", names)
    kv = pa.table({"sid": at_sid, "key": key, "value": value}).filter(named)
    kv_sql = f"INSERT INTO trc_kv SELECT sid, key, {val}, {_kind_sql('value', names)} FROM __trc_kv"
    run_on_arrow(con, "__trc_kv", kv, kv_sql)
    insert_docs(con, key, value, at_sid, val)
    # a request framed from a document's span carries no resource: its resource is a request of its own
    rsrc = pa.table({"res": res, "attributes": rs_attrs}).filter(pc.is_valid(rs_attrs))
    entry = f"struct_pack(k := a.key, v := {_value_sql('a.value', names)})"
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


Parsed = tuple[pa.Table, np.ndarray, np.ndarray]
"""A parsed block: its requests, the line of each, the resource number each request's resources follow."""


def _store(con: duckdb.DuckDBPyConnection, path: Path, keys: list[str], rare: list[bool], parsed: Parsed | None,
           again: Callable[[], Parsed | None], exact: Callable[[], Parsed]) -> None:  # fmt: skip
    """A block into the staging tables: pyarrow's parse ``parsed`` (None when it refused the block), parsed
    ``again`` with the rarer kinds when it lacks one (and so is every later block of the file: ``rare``), else
    DuckDB's ``exact`` parse."""
    if parsed is not None and not _fast(con, path, *parsed, keys):
        rare[0] = True  # the file has them: its next blocks are parsed with them from the start
        parsed = again()
        if parsed is not None and not _fast(con, path, *parsed, keys):
            raise RuntimeError("a block parsed with every kind of value was taken as lacking one")
    if parsed is None:
        _fast(con, path, *exact(), keys)


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


def read_lines(con: duckdb.DuckDBPyConnection, path: Path, res0: int, keys: list[str], checked: bool = False,
               digest: Folded | None = None) -> int:  # fmt: skip
    """Append a file of one request per line to the staging tables; returns the last resource number used.
    ``keys``: the attributes kept; ``checked`` and ``digest`` as ``line_blocks`` takes them."""
    last, rare = 0, [False]
    for line0, data, feeds, parsed in _parsed_blocks(path, checked, digest, rare):
        last = line0 + feeds
        _line_block(con, path, keys, rare, res0, line0, data, feeds, parsed)
    return int(res0) + (last + 1) * _RES_STRIDE


def _line_block(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    keys: list[str],
    rare: list[bool],
    res0: int,
    line0: int,
    data: bytearray,
    feeds: int,
    parsed: tuple[pa.Table, np.ndarray] | None,
) -> None:
    """A block of lines (``line_blocks``) and pyarrow's parse of it into the staging tables (``_store``)."""

    def based(p: tuple[pa.Table, np.ndarray] | None) -> Parsed | None:
        return None if p is None else (*p, res0 + p[1] * _RES_STRIDE)

    def exact() -> Parsed:
        texts = bytes(data).split(b"\n")
        if texts and not texts[-1]:
            texts.pop()
        tbl, at = _exact(con, path, texts, np.arange(line0, line0 + len(texts), dtype=np.int64))
        return tbl, line0 + at, res0 + (line0 + at) * _RES_STRIDE

    _store(con, path, keys, rare, based(parsed), lambda: based(_parse(line0, data, feeds, rare=True)), exact)


def longest_line_fits(path: Path) -> bool:
    """Whether every line of ``path`` is at most ``MAX_LINE`` bytes (else the document reader streams it)."""
    seen = text_fault(path)
    return seen is None or seen.fault is None or not seen.fault[1].startswith("line longer than")


class _Walk:
    """A request document walked a container at a time: each span framed as a one-span request, each resource
    as a request of its own (numbered as the spans it holds), stored in batches by the path line files take."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, res0: int, keys: list[str]) -> None:
        self.con, self.path, self.file, self.res, self.keys = con, path, str(path), res0, keys
        self.texts: list[bytes] = []
        self.lines: list[int] = []
        self.base: list[int] = []
        self.rare = [False]

    def add(self, line: int, text: str) -> None:
        # a raw line feed in JSON text is only ever a blank between tokens: each framed request is one line
        self.texts.append(text.replace("\n", " ").replace("\r", " ").encode())
        self.lines.append(line)
        self.base.append(self.res - 1)
        if len(self.texts) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.texts:
            return
        texts, lines, base = self.texts, np.asarray(self.lines, np.int64), np.asarray(self.base, np.int64)
        self.texts, self.lines, self.base = [], [], []
        data = bytearray(b"\n".join(texts))

        def parse(rare: bool) -> Parsed | None:
            tbl = _arrow(data, rare)
            return None if tbl is None or tbl.num_rows != len(texts) else (tbl, lines, base)

        def exact() -> Parsed:
            tbl, at = _exact(self.con, self.path, texts, lines)
            return tbl, lines[at], base[at]

        _store(self.con, self.path, self.keys, self.rare, parse(self.rare[0]), lambda: parse(True), exact)

    def request(self, js: JsonStream) -> None:
        if js.kind() != "object":
            raise js.error("expected an OTLP export request: an object with resourceSpans")
        line, found = js.line, False
        for key in js.items():
            if key in _RESOURCE and js.kind() == "array":
                found = True
                for _ in js.elements():
                    self.resource_spans(js)
            else:
                js.skip()
        if not found:  # another format's object (a Langfuse observation) would be skipped without a word
            raise JsonStreamError(self.file, line, None, NOT_A_REQUEST)

    def resource_spans(self, js: JsonStream) -> None:
        self.res += 1
        for key in js.items():
            if key == "resource":
                self.add(js.line, '{"resourceSpans": [{"resource": ' + js.raw() + "}]}")
            elif key in _SCOPE and js.kind() == "array":
                for _ in js.elements():
                    self.scope_spans(js)
            else:
                js.skip()

    def scope_spans(self, js: JsonStream) -> None:
        for key in js.items():
            if key == "spans" and js.kind() == "array":
                for _ in js.elements():
                    self.add(js.line, '{"resourceSpans": [{"scopeSpans": [{"spans": [' + js.raw() + "]}]}]}")
            else:
                js.skip()


def read_otlp(con: duckdb.DuckDBPyConnection, path: Path, res0: int, opts: TraceOptions) -> int:
    """Append the spans of ``path`` to the staging tables; returns the last resource number used. Raises
    ``JsonStreamError`` naming file, line and column when the file is not OTLP/JSON."""
    if longest_line_fits(path) and _first_line_is_object(path):  # the Collector file exporter's layout
        return read_lines(con, path, res0, wanted_keys(opts))
    walk = _Walk(con, path, res0, wanted_keys(opts))
    with json_stream(path) as js:
        for _ in js.lines():
            walk.request(js)
    walk.flush()
    return walk.res


def create_raw(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE trc_res (res BIGINT, attrs VARCHAR)")
    con.execute(
        "CREATE OR REPLACE TEMP TABLE trc_sp (sid BIGINT, file VARCHAR, line BIGINT, res BIGINT, trace_id VARCHAR, "
        "span_id VARCHAR, parent_id VARCHAR, start_ns VARCHAR, end_ns VARCHAR, code VARCHAR, message VARCHAR)"
    )
    # ``kind``: what a value that is no single id holds (``_kind_sql``), NULL for a string or an integer
    con.execute("CREATE OR REPLACE TEMP TABLE trc_kv (sid BIGINT, key VARCHAR, val VARCHAR, kind VARCHAR)")


def _first_line_is_object(path: Path) -> bool:
    """Whether the first line is a whole JSON object: with every line within the line reader's limit
    (``longest_line_fits``; a longer one is streamed as a document), the file is one request per line."""
    with open_binary(path) as fh:
        first = fh.readline(MAX_LINE + 1).decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        return isinstance(bounded_loads(first, MAX_LINE), dict)
    except ValueError:  # not JSON, or beyond the parser's bounds: the document reader names where
        return False


def read_otlp_once(
    con: duckdb.DuckDBPyConnection, path: Path, res0: int, opts: TraceOptions, digest: bool
) -> int | None:
    """A plain file of one request per line read in one pass that also checks what the text scan checks and,
    with ``digest``, takes the sha256 the load records (``line_blocks``), where each had a pass of its own;
    returns the last resource number used. None, with nothing of the file left staged, when that pass does not
    take the file: compressed, not one request per line, holding what the scan stops at, or refused by the
    reader. The caller then reads it the usual way, the scan first, so every refusal is the one it was."""
    if compression_of(path) is not None or path_findings(path) or not _first_line_is_object(path):
        return None
    (sid0,) = con.execute(
        "SELECT coalesce(max(last_value), 0) FROM duckdb_sequences() WHERE temporary AND sequence_name = 'trc_sid'"
    ).fetchall()[0]
    try:
        return read_lines(con, path, res0, wanted_keys(opts), checked=True, digest=folded(path) if digest else None)
    except (TextFault, JsonStreamError, OSError):
        for table in ("trc_kv", "trc_docs", "trc_docs_lines", "trc_faults", "trc_sp"):
            con.execute(f"DELETE FROM {table} WHERE sid > ?", [sid0])
        con.execute("DELETE FROM trc_res WHERE res > ?", [res0])
        return None


def wanted_keys(opts: TraceOptions) -> list[str]:
    """The attribute keys a span is read by (besides the document attributes)."""
    named = [
        "openinference.span.kind",
        "input.value",
        "reranker.query",
        "gen_ai.operation.name",
        "gen_ai.retrieval.query.text",
        "gen_ai.retrieval.documents",
        "gen_ai.data_source.id",
    ]
    named += [k for k in (opts.query, opts.docs, opts.case_id_attribute, opts.principal_attribute) if k]
    named += [opts.groups_attribute] if opts.groups_attribute else []
    return list(dict.fromkeys(named))


def normalise_otlp(con: duckdb.DuckDBPyConnection, opts: TraceOptions) -> None:
    """``trc_sp``, ``trc_kv`` and ``trc_res`` -> ``trc_spans`` (see the package docstring)."""
    listed = ", ".join(sql_str(k) for k in wanted_keys(opts))

    def attr(key: str | None) -> str:
        return f"max(val) FILTER (WHERE key = {sql_str(key)})" if key else "CAST(NULL AS VARCHAR)"

    twice = " ".join(
        f"WHEN count(*) FILTER (WHERE key = {sql_str(k)}) > 1 THEN {sql_str(k)}" for k in wanted_keys(opts)
    )
    p = sql_str(opts.principal_attribute or "")
    # the principal is one id (a string or an integer); another kind is refused, never read as no principal
    principal = f"max(val) FILTER (WHERE key = {p} AND kind IS NULL)"
    bad_principal = f"max(coalesce(val, kind)) FILTER (WHERE key = {p} AND kind IS NOT NULL)"
    docs_attr = attr(opts.docs) if opts.docs else "CAST(NULL AS VARCHAR)"
    # the spans' attributes, pivoted where they are read: every table the load makes is held until it commits
    attrs = f"""(SELECT sid, upper({attr("openinference.span.kind")}) AS oi_kind, {attr("gen_ai.operation.name")} AS op,
                        {attr("input.value")} AS input, {attr("reranker.query")} AS rerank_query,
                        {attr("gen_ai.retrieval.query.text")} AS genai_query, {attr(opts.query)} AS opt_query,
                        {attr("gen_ai.retrieval.documents")} AS genai_docs, {docs_attr} AS opt_docs,
                        {attr(opts.case_id_attribute)} AS case_attr, {principal} AS principal,
                        {bad_principal} AS bad_principal,
                        {attr(opts.groups_attribute)} AS groups_text, CASE {twice} END AS twice
                 FROM trc_kv WHERE key IN ({listed}) GROUP BY sid)"""
    start, end = "TRY_CAST(r.start_ns AS HUGEINT)", "TRY_CAST(r.end_ns AS HUGEINT)"
    # a JSON list of names, else one name; an object (or a list of something else) is no groups value: refused
    g = "CAST(a.groups_text AS JSON)"
    groups = f"""(CASE WHEN NOT json_valid(a.groups_text) THEN [a.groups_text]
                       WHEN json_type({g}) = 'ARRAY' THEN TRY_CAST({g} AS VARCHAR[])
                       WHEN json_type({g}) <> 'OBJECT' THEN [a.groups_text] END)"""
    code, msg = "r.code", "nullif(r.message, '')"
    kind = (
        "CASE WHEN a.opt_docs IS NOT NULL THEN 'RETRIEVER' WHEN a.oi_kind IN ('RETRIEVER', 'RERANKER') THEN a.oi_kind "
        "WHEN lower(a.op) = 'retrieval' THEN 'RETRIEVER' END"
    )
    con.execute(
        f"""INSERT INTO trc_spans BY NAME
            SELECT r.sid, r.file, r.line,
                   r.trace_id, r.span_id, nullif(r.parent_id, '') AS parent_id,
                   {kind} AS kind,
                   CASE WHEN {kind} = 'RERANKER' THEN coalesce(a.opt_query, a.rerank_query, a.input)
                        ELSE coalesce(a.opt_query, a.input, a.genai_query) END AS query,
                   CAST({start} AS DOUBLE) / 1e6 AS started,
                   CAST({end} - {start} AS DOUBLE) / 1e6 AS latency_ms,
                   CASE WHEN {code} IN ('2', 'STATUS_CODE_ERROR', 'ERROR') THEN coalesce({msg}, 'error status') END
                       AS error,
                   a.case_attr, a.principal, a.bad_principal,
                   {groups} AS groups,
                   res.attrs AS resource, a.twice,
                   {_bad_time("r.start_ns")} AS bad_start, {_bad_time("r.end_ns")} AS bad_end,
                   CASE WHEN a.groups_text IS NOT NULL AND {groups} IS NULL THEN a.groups_text END AS bad_groups
            FROM trc_sp r JOIN {attrs} a USING (sid) LEFT JOIN trc_res res USING (res)
            WHERE {kind} IS NOT NULL"""
    )
    drop_unkept(con, "trc_sp", "trc_spans")  # the other formats' spans have sids of their own
    listed_docs = ", ".join(sql_str(k) for k in ("gen_ai.retrieval.documents", opts.docs) if k)
    json_docs = f"SELECT count(*) FROM (SELECT 1 FROM trc_kv WHERE key IN ({listed_docs}) LIMIT 1)"
    if con.execute(json_docs).fetchall()[0][0]:  # only spans with a JSON list of documents need the pivot again
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE trc_otlp AS SELECT sid, genai_docs, opt_docs FROM {attrs} a
                WHERE {kind} IS NOT NULL AND (genai_docs IS NOT NULL OR opt_docs IS NOT NULL)"""
        )
        json_list_docs(con, "trc_otlp", "genai_docs", TraceOptions())
        json_list_docs(con, "trc_otlp", "opt_docs", opts)
        con.execute("DROP TABLE trc_otlp")
    for table in ("trc_kv", "trc_sp", "trc_res"):
        con.execute(f"DROP TABLE {table}")


def _bad_time(ns: str) -> str:
    """SQL: the text ``ns`` when it is not an OTLP time (nanoseconds since the epoch: digits, within 64 bits),
    else NULL; a missing time is NULL too."""
    ok = f"regexp_full_match({ns}, '[0-9]{{1,20}}') AND TRY_CAST({ns} AS UBIGINT) IS NOT NULL"
    return f"CASE WHEN NOT ({ok}) THEN {ns} END"


def json_list_docs(con: duckdb.DuckDBPyConnection, spans: str, column: str, opts: TraceOptions) -> None:
    """Append to ``trc_docs`` the documents of a JSON-list column of ``spans`` (GenAI's, the user's path, a
    Langfuse output), each read with the ``doc_id``/``score``/``content`` paths, else the usual names."""
    paths = {
        "id": [opts.doc_id] if opts.doc_id else ["id", "metadata.id", "metadata.document_id"],
        "score": [opts.score] if opts.score else ["score", "metadata.score"],
        "content": [opts.content] if opts.content else ["content", "page_content", "text"],
        "metadata": ["metadata"],
    }
    list_docs(con, spans, column, "retrieved", {f: [json_path(p) for p in ps] for f, ps in paths.items()})
