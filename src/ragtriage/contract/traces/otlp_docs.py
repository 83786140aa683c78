"""OpenInference documents: the attributes ``<list>.<i>.document.<id|score|content|metadata>`` of a retriever
(``retrieval.documents``) or a reranker (``reranker.input_documents``, ``reranker.output_documents``), pivoted
into one row per document of ``trc_docs``, ranked by index: in Arrow (``pivot``), or for a block it cannot take by
the one SQL pivot (``insert_docs``). The documents of a span that turns
out to be no retrieval are dropped once every span is read (``drop_unkept``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.contract.arrow_scan import run_on_arrow
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces.tables import role_text

OI_DOCS = (
    r"^(?P<list>retrieval\.documents|reranker\.input_documents|reranker\.output_documents)\.(?P<i>[^.]*)"
    r"\.document\.(?P<field>id|score|content|metadata)$"
)
"""An OpenInference document attribute: (list, index, field). Any index text matches, so one that is not a list
position (``-1``, ``x``, one past INTEGER) is refused by the SQL pivot (``insert_docs``), never left out."""

_GOOD_INDEX = "coalesce(regexp_full_match(i, '[0-9]{1,10}') AND TRY_CAST(i AS BIGINT) <= 2147483647, FALSE)"
"""SQL: the index text ``i`` is a list position the store's INTEGER holds."""


def odd_sql(v: str, fields: Collection[str]) -> str:
    """SQL: what an ``AnyValue`` struct ``v`` (of the fields ``fields``) holds where a document's field takes one
    scalar (an array, a key-value list or a bool), else NULL."""
    kinds = (("arrayValue", "array_value", "an array"), ("kvlistValue", "kvlist_value", "a key-value list"),
             ("boolValue", "bool_value", "a bool"))  # fmt: skip
    parts = [f"WHEN {' OR '.join(f'{v}.{k} IS NOT NULL' for k in (a, b) if k in fields)} THEN {sql_str(w)}"
             for a, b, w in kinds if a in fields or b in fields]  # fmt: skip
    return f"CASE {' '.join(parts)} END" if parts else "CAST(NULL AS VARCHAR)"


def _key_sql() -> str:
    return "list || '.' || i || '.document.' || field"


DOC_PREFIXES = ("retrieval.documents.", "reranker.input_documents.", "reranker.output_documents.")
"""Where an OpenInference document attribute's key starts (``OI_DOCS`` says the rest)."""


_COLUMNS = "sid, role, idx, document_id, score_text, content, metadata, rank"


def insert_docs(con: duckdb.DuckDBPyConnection, key: pa.Array, value: pa.Array, sid: np.ndarray, val: str) -> None:
    """Append the documents among a block's attributes (``key`` and ``value``, of the spans ``sid``) to
    ``trc_docs`` (or ``trc_docs_lines``): pivoted in Arrow (``pivot``) where it takes the block, else in SQL, which
    also appends to ``trc_faults`` what is refused: an index that is not a list position, a field given twice, an
    id that is no single value (``odd_sql``). ``val``: the SQL of an attribute ``value`` as text."""
    docs = pivot(key, value, sid)
    if docs is not None:
        if docs.num_rows:
            run_on_arrow(con, "__trc_docs", docs, _pivoted_sql("__trc_docs", docs.column_names))
        return
    rows = f"SELECT sid, list, i, field, {val} AS val, {odd_sql('value', value.type.names)} AS odd FROM __trc_dkv"
    run_on_arrow(con, "__trc_dkv", _doc_rows(key, value, sid), f"CREATE OR REPLACE TEMP TABLE trc_drows AS {rows}")
    con.execute(
        f"""INSERT INTO trc_faults
            SELECT DISTINCT sid, list || '.' || i, i, 'index' FROM trc_drows WHERE NOT {_GOOD_INDEX}
            UNION ALL SELECT sid, {_key_sql()}, odd, 'value' FROM trc_drows WHERE odd IS NOT NULL AND field = 'id'
            UNION ALL SELECT sid, {_key_sql()}, NULL, 'twice' FROM trc_drows GROUP BY ALL HAVING count(*) > 1"""
    )
    con.execute(
        f"""INSERT INTO trc_docs ({_COLUMNS})
            SELECT *, row_number() OVER (PARTITION BY sid, role ORDER BY idx) FROM (
            SELECT sid, CASE list WHEN 'retrieval.documents' THEN 'retrieved'
                                  WHEN 'reranker.input_documents' THEN 'input' ELSE 'output' END AS role,
                   CAST(i AS INTEGER) AS idx,
                   max(val) FILTER (WHERE field = 'id'), max(val) FILTER (WHERE field = 'score'),
                   max(val) FILTER (WHERE field = 'content'), max(val) FILTER (WHERE field = 'metadata')
            FROM trc_drows WHERE {_GOOD_INDEX} GROUP BY sid, list, i)"""
    )
    con.execute("DROP TABLE trc_drows")


def drop_unkept(con: duckdb.DuckDBPyConnection, read: str, kept: str) -> None:
    """Delete the documents of the spans of ``read`` that are not in ``kept`` (each a table with ``sid``)."""
    for table in ("trc_docs", "trc_docs_lines"):
        con.execute(f"DELETE FROM {table} WHERE sid IN (SELECT sid FROM {read} EXCEPT SELECT sid FROM {kept})")


_LISTS = (  # in the order of tables.ROLES
    "retrieval.documents",
    "reranker.input_documents",
    "reranker.output_documents",
)
_FIELDS = ("id", "score", "content", "metadata")
_TEXT = ("stringValue", "string_value", "intValue", "int_value")
_INT_MAX = 2**31 - 1


def _doc_rows(key: pa.Array, value: pa.Array, sid: np.ndarray) -> pa.Table:
    """``(sid, list, i, field, value)`` of the attributes whose key is a document's (``OI_DOCS``, matched here
    once per distinct key), for the SQL pivot."""
    m, codes, match = _keys(key)
    rows = np.flatnonzero(match[codes])
    m = m.take(pa.array(codes[rows]))
    return pa.table(
        {
            "sid": sid[rows],
            "list": pc.struct_field(m, "list"),
            "i": pc.struct_field(m, "i"),
            "field": pc.struct_field(m, "field"),
            "value": value.take(pa.array(rows)),
        }
    )


def _keys(key: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """``OI_DOCS`` matched on each distinct key, each attribute's position among them (a null key: one past the
    end) and whether each distinct key (and the null past the end: never) is a document's."""
    enc = pc.dictionary_encode(key)
    m = pc.extract_regex(enc.dictionary, OI_DOCS)
    codes = pc.fill_null(enc.indices, len(m)).to_numpy()
    return m, codes, np.append(m.is_valid().to_numpy(zero_copy_only=False), False)


def pivot(key: pa.Array, value: pa.Array, sid: np.ndarray) -> pa.Table | None:
    """The rows the SQL pivot (``insert_docs``) makes of the block's document attributes, pivoted here: ``(sid,
    role, idx, rank, <field>_text, <field>_double)`` per document (the role as its position in ``tables.ROLES``),
    the text of a value to be taken before its double (as ``otlp._value_sql``). None when the block needs SQL's
    pivot: a field given twice, an index that is no list position or past INTEGER, or a value of another kind
    (bool, array, a snake_case double); an empty table when there are no documents. A column with no value in the
    block is left out."""
    m, codes, match = _keys(key)
    rows = np.flatnonzero(match[codes])
    if not len(rows):
        return pa.table({})
    kinds = {f.name: pc.struct_field(value, f.name) for f in value.type}
    kinds = {n: c for n, c in kinds.items() if c.null_count < len(c)}  # the kinds of value the block has
    other = [n for n in kinds if n not in _TEXT and n != "doubleValue"]
    if any(kinds[n].take(pa.array(rows)).null_count < len(rows) for n in other):
        return None
    index_texts = pc.struct_field(m, "i").to_pylist()
    if not all(i.isascii() and i.isdigit() and len(i) <= 10 for i in index_texts if i is not None):
        return None  # an index that is no list position: SQL's pivot refuses it
    index = [int(i) if i else 0 for i in index_texts]
    if max(index) > _INT_MAX:
        return None
    code = codes[rows]
    lst = np.array([_LISTS.index(x) if x in _LISTS else 0 for x in pc.struct_field(m, "list").to_pylist()])[code]
    fld = np.array([_FIELDS.index(x) if x in _FIELDS else 0 for x in pc.struct_field(m, "field").to_pylist()])[code]
    idx = np.asarray(index, np.int64)[code]
    s = sid[rows]
    # an exporter writes a list in order: sort only the blocks that are not
    on = (lst[1:] > lst[:-1]) | (lst[1:] == lst[:-1]) & (idx[1:] >= idx[:-1])
    if not np.all((s[1:] > s[:-1]) | (s[1:] == s[:-1]) & on):
        order = np.lexsort((idx, lst, s))
        rows, s, lst, idx, fld = rows[order], s[order], lst[order], idx[order], fld[order]
    same = (s[1:] == s[:-1]) & (lst[1:] == lst[:-1]) & (idx[1:] == idx[:-1])
    group = np.concatenate([[0], np.cumsum(~same)])
    if np.bincount(group * len(_FIELDS) + fld).max() > 1:  # a field given twice: SQL keeps the larger
        return None
    first = np.flatnonzero(np.concatenate([[True], ~same]))
    n = np.arange(len(first))
    new_list = np.concatenate([[True], (s[first][1:] != s[first][:-1]) | (lst[first][1:] != lst[first][:-1])])
    rank = n - np.maximum.accumulate(np.where(new_list, n, 0)) + 1
    cols: dict[str, Any] = {
        "sid": s[first],
        "role": lst[first].astype(np.uint8),
        "idx": idx[first].astype(np.int32),
        "rank": rank.astype(np.int32),
    }
    # each field's values taken once, straight from the block's attributes, and only the kinds it has
    # DuckDB's parse gives every value as text: a double written so stays text, as the SQL pivot keeps it
    double = "doubleValue" in kinds and pa.types.is_floating(kinds["doubleValue"].type)
    valid = {k: c.is_valid().to_numpy(zero_copy_only=False) for k, c in kinds.items()}
    for f, name in enumerate(_FIELDS):
        has = fld == f
        if not has.any():
            continue
        at = np.full(len(first), -1, np.int64)
        at[group[has]] = rows[has]
        taken = pa.array(at, mask=at < 0)
        present = [k for k in (*_TEXT, "doubleValue") if k in kinds and valid[k][rows[has]].any()]
        texts = [kinds[k].take(taken) for k in present if k in _TEXT or k == "doubleValue" and not double]
        if texts:
            cols[f"{name}_text"] = pc.coalesce(*texts) if len(texts) > 1 else texts[0]
        if "doubleValue" in present and double:
            cols[f"{name}_double"] = kinds["doubleValue"].take(taken)
    return pa.table(cols)


_LINE_PIVOT = {"sid", "role", "idx", "rank", "id_text", "score_double"}
"""The ``pivot`` columns of a block whose documents go to ``tables.LINE_DOC_COLUMNS``."""


def _pivoted_sql(name: str, columns: list[str]) -> str:
    """The statement appending the ``pivot`` table ``name`` (of ``columns``) to ``trc_docs``, or to
    ``trc_docs_lines`` when it has nothing more than an id and a numeric score. A score read as a number stays one
    (``score``); only a score written as text is kept as text (``score_text``)."""
    if set(columns) <= _LINE_PIVOT:
        parts = {"id_text": "document_id", "score_double": "score"}
        into = ", ".join(parts.get(c, c) for c in columns)
        return f"INSERT INTO trc_docs_lines ({into}) SELECT {', '.join(columns)} FROM {name}"

    def text(f: str) -> str:
        parts = [f"{f}_text"] if f"{f}_text" in columns else []
        parts += [f"CAST({f}_double AS VARCHAR)"] if f"{f}_double" in columns and f != "score" else []
        return f"coalesce({', '.join(parts)})" if parts else "CAST(NULL AS VARCHAR)"

    score = "score_double" if "score_double" in columns else "CAST(NULL AS DOUBLE)"
    if "score_text" in columns and "score_double" in columns:
        score = f"CASE WHEN score_text IS NULL THEN {score} END"
    return (
        f"INSERT INTO trc_docs ({_COLUMNS}, score) SELECT sid, {role_text('role')}, idx, "
        f"{', '.join(map(text, _FIELDS))}, rank, {score} FROM {name}"
    )
