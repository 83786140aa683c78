"""The block-at-a-time JSON reader gives ``json.loads``' values whatever the block boundaries cut, and names the
line and column of what is wrong."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.contract.json_stream import JsonStream, JsonStreamError

ids = st.text(st.characters(min_codepoint=1, max_codepoint=0x2FFF, blacklist_categories=("Cs",)), max_size=12)
numbers = st.one_of(st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False))
docs = st.dictionaries(ids, numbers, max_size=8)


def _walk(text: str, block: int) -> dict[str, Any]:
    js = JsonStream(io.BytesIO(text.encode()), "f.json", block)
    out = {key: js.value() for key in js.items()}
    assert js.is_end()
    return out


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(ids, docs, max_size=6), st.sampled_from([None, 0, 2]), st.integers(1, 40))
def test_any_block_size_reads_what_json_loads_reads(doc: dict[str, Any], indent: int | None, block: int) -> None:
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    assert _walk(text, block) == json.loads(text)


def test_arrays_and_lines_are_walked_with_their_line_numbers() -> None:
    js = JsonStream(io.BytesIO(b'{"a": [1, {"b": 2}, []]}\n\n{"x": 1}\n'), "f", 3)
    seen = []
    for line in js.lines():
        for key in js.items():
            if js.kind() == "array":
                seen += [(line, key, i, js.value()) for i in js.elements()]
            else:
                seen.append((line, key, None, js.value()))
    assert seen == [(1, "a", 0, 1), (1, "a", 1, {"b": 2}), (1, "a", 2, []), (3, "x", None, 1)]


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        (b'{"a": {"b": 1}\n, "c": [1, 2,\n]}', 3, 1, "malformed JSON: Expecting value"),
        (b'{"a": 1 "b": 2}', 1, 9, "expected ',' or '}' after a value"),
        (b'\xef\xbb\xbf{"a": \n  [1,', 2, 6, "ends inside a JSON value"),
        (b'{"a": \n  tru}', 2, 3, "malformed JSON: Expecting value"),
        (b'{"a": "\xc3"}', 1, None, "not UTF-8"),
        (b"{a: 1}", 1, 2, "expected a key in double quotes"),
    ],
)
def test_errors_name_line_and_column(text: bytes, line: int, column: int | None, message: str) -> None:
    js = JsonStream(io.BytesIO(text), "f.json", 4)
    with pytest.raises(JsonStreamError) as exc:
        for _ in js.items():
            js.value()
    assert exc.value.line == line and message in exc.value.message, exc.value
    if column is not None:
        assert exc.value.column == column
