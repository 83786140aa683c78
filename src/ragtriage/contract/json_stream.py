"""One large JSON document read a block at a time: a pull parser whose leaves are decoded by ``json``'s C scanner.

A pytrec_eval run or an OTLP export is a single JSON value that can be gigabytes long; DuckDB's JSON reader and
``json.load`` both hold the whole document (and DuckDB asks for several times its size, beyond a load's memory
cap). Here the caller walks the containers it knows (``items``, ``elements``) and decodes each entry it wants in
one ``raw_decode`` call, so memory is bounded by the largest single entry, not by the file, and no Python code
runs per character.

Errors name the file, the line and the column, and what was expected there (``JsonStreamError``).

Every JSON value a reader decodes goes through ``bounded_loads`` or this stream, the one bounded parser: a value
nested deeper than the decoder recurses (``DEPTH_LIMIT``) or longer than the caller's size limit is refused with
its position instead of exhausting the interpreter's stack, and an object holding one key twice is refused (the
second value would replace the first silently), with both positions where the stream walks the object itself.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ragtriage.contract.compression import open_binary

_WS = re.compile(r"[ \t\n\r]*")
DEPTH_LIMIT = "JSON nested deeper than the reader takes (about 1,000 levels; an export nests fewer than 12)"
"""``json``'s C scanner recurses once per level and stops at the interpreter's recursion limit: the depth bound
every JSON input is held to, refused with this message instead of a ``RecursionError``."""


class DuplicateKey(ValueError):
    """An object holding ``key`` twice; its first value would be replaced by the second without a word."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"the key {key!r} appears twice in one object")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_unique)


class JsonLimitError(ValueError):
    """A JSON value beyond the parser's bounds (``DEPTH_LIMIT``, a size limit) or holding a key twice; ``pos`` is
    the offset of the value in the text it was decoded from."""

    def __init__(self, message: str, pos: int) -> None:
        self.message, self.pos = message, pos
        super().__init__(message)


def decode_bounded(text: str, pos: int = 0) -> tuple[Any, int]:
    """``raw_decode`` of the value at ``pos``, bounded: ``JsonLimitError`` for a value nested too deep
    (``DEPTH_LIMIT``) or holding a key twice, ``json.JSONDecodeError`` for text that is not JSON."""
    try:
        return _DECODER.raw_decode(text, pos)
    except RecursionError:
        raise JsonLimitError(DEPTH_LIMIT, pos) from None
    except DuplicateKey as exc:
        raise JsonLimitError(str(exc), pos) from None


def bounded_loads(text: str | bytes, max_size: int) -> Any:
    """``json.loads`` for a value read whole (one line of a file, a manifest): refused (``ValueError``, a
    ``JsonLimitError`` when it is the bounds) when longer than ``max_size`` characters, nested too deep or
    holding a key twice."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if len(text) > max_size:
        raise JsonLimitError(f"a JSON value longer than {max_size:,} characters", 0)
    start = _WS.match(text).end()  # type: ignore[union-attr]
    obj, end = decode_bounded(text, start)
    if text[end:].strip(" \t\n\r"):
        raise json.JSONDecodeError("Extra data", text, end)
    return obj


_BLOCK = 1 << 22
_NEAR_END = 32  # an error this close to the end of the buffer may only be a value cut by the block boundary


class JsonStreamError(ValueError):
    """A document that is not the JSON expected; ``line``/``column`` are 1-based (None: before any text)."""

    def __init__(self, file: str, line: int | None, column: int | None, message: str) -> None:
        self.file, self.line, self.column, self.message = file, line, column, message
        where = f"{file}:{line}:{column}" if line is not None else file
        super().__init__(f"{where}: {message}")


class JsonStream:
    """A cursor over the text of one JSON document. ``items()``/``elements()`` walk an object/array one entry at a
    time; ``value()`` decodes the entry under the cursor whole; ``skip()`` decodes and drops it."""

    def __init__(self, fh: IO[bytes], label: str, block: int = _BLOCK) -> None:
        self._reader = codecs.getincrementaldecoder("utf-8-sig")(errors="strict")
        self._fh, self.label, self._block = fh, label, block
        self._buf, self._pos, self._eof = "", 0, False
        self._line_base = 0  # newlines before the start of the buffer
        self._col_base = 0  # characters of the buffer's first line that came before the buffer
        self._mark, self._mark_line = 0, 1  # a position of the buffer and its line

    # -- buffer ---------------------------------------------------------------------------------------------
    def _more(self, at_least: int = 0) -> bool:
        """Append a block (or ``at_least`` characters) of text; False at the end of the file."""
        if self._eof:
            return False
        try:
            raw = self._fh.read(max(self._block, at_least))
            text = self._reader.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise self.error(f"the file is not UTF-8 ({exc.reason}); save it as UTF-8") from exc
        if not raw:
            self._eof = True
            return False
        line, col = self.where()
        self._line_base, self._col_base = line - 1, col - 1
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        self._mark, self._mark_line = 0, line
        return True

    def _line_at(self, pos: int) -> int:
        """The 1-based line of ``pos``, counting newlines only from the last position asked (cheap when called
        for every entry of a long file)."""
        if pos < self._mark:
            self._mark, self._mark_line = 0, self._line_base + 1
        self._mark_line += self._buf.count("\n", self._mark, pos)
        self._mark = pos
        return self._mark_line

    def where(self, pos: int | None = None) -> tuple[int, int]:
        """(line, column) of ``pos`` in the buffer (default: the cursor)."""
        pos = self._pos if pos is None else pos
        line = self._line_at(pos)
        start = self._buf.rfind("\n", 0, pos) + 1
        return line, pos - start + 1 + (self._col_base if start == 0 else 0)

    @property
    def line(self) -> int:
        self.peek()
        return self._line_at(self._pos)

    def error(self, message: str, pos: int | None = None) -> JsonStreamError:
        line, col = self.where(pos)
        return JsonStreamError(self.label, line, col, message)

    def peek(self) -> str:
        """The next non-blank character ("" at the end of the file), without consuming it."""
        while True:
            self._pos = _WS.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._more():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        ch = self.peek()
        if not ch or ch not in chars:
            found = "the end of the file" if not ch else repr(self._buf[self._pos : self._pos + 20])
            raise self.error(f"expected {what}, found {found}")
        self._pos += 1
        return ch

    # -- values ---------------------------------------------------------------------------------------------
    def value(self) -> Any:
        """Decode the value under the cursor whole (reading more of the file while it is cut by the buffer)."""
        return self._decode()[0]

    def raw(self) -> str:
        """The JSON text of the value under the cursor (checked by decoding it), for a reader that parses it
        later in bulk."""
        return self._decode()[1]

    def _decode(self) -> tuple[Any, str]:
        self.peek()
        grow = self._block
        while True:
            try:
                obj, end = decode_bounded(self._buf, self._pos)
            except JsonLimitError as exc:
                raise self.error(exc.message, exc.pos) from None
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self._buf) - _NEAR_END or exc.msg.startswith("Unterminated string")
                if cut and self._more(grow):
                    grow *= 2
                    continue
                if exc.pos >= len(self._buf.rstrip()) or exc.msg.startswith("Unterminated string"):
                    raise self.error("the file ends inside a JSON value (is it cut short?)", exc.pos) from None
                raise self.error(f"malformed JSON: {exc.msg}", exc.pos) from None
            if end == len(self._buf) and self._more(grow):  # a number may go on in the next block
                grow *= 2
                continue
            start, self._pos = self._pos, end
            return obj, self._buf[start:end]

    def skip(self) -> None:
        self.value()

    def is_end(self) -> bool:
        """Whether only blanks are left."""
        return self.peek() == ""

    def kind(self) -> str:
        """``object``, ``array``, ``string``, ``other`` or ``end`` for the value under the cursor."""
        return {"{": "object", "[": "array", '"': "string", "": "end"}.get(self.peek(), "other")

    # -- containers -----------------------------------------------------------------------------------------
    def items(self) -> Iterator[str]:
        """Walk the object under the cursor: yield each key with the cursor on its value, which the caller must
        consume (``value``, ``skip``, or a nested walk) before asking for the next key. A key given twice is
        refused with both positions (the second value would replace the first)."""
        self._expect("{", "a JSON object")
        if self.peek() == "}":
            self._pos += 1
            return
        seen: dict[str, tuple[int, int]] = {}
        while True:
            if self.peek() != '"':
                raise self.error("expected a key in double quotes")
            at = self.where()
            key = self.value()
            if key in seen:
                first = "line {}, column {}".format(*seen[key])
                raise JsonStreamError(self.label, *at, f"the key {key!r} appears twice (first at {first})")
            seen[key] = at
            self._expect(":", "':' after a key")
            yield key
            if self._expect(",}", "',' or '}' after a value") == "}":
                return

    def elements(self) -> Iterator[int]:
        """Walk the array under the cursor: yield each index with the cursor on its element (consume it)."""
        self._expect("[", "a JSON array")
        if self.peek() == "]":
            self._pos += 1
            return
        i = 0
        while True:
            yield i
            i += 1
            if self._expect(",]", "',' or ']' after an element") == "]":
                return

    def lines(self) -> Iterator[int]:
        """For a file of one JSON value per line: yield each value's line number with the cursor on it."""
        while not self.is_end():
            yield self.line


@contextmanager
def json_stream(path: Path, block: int = _BLOCK) -> Iterator[JsonStream]:
    """A stream over ``path`` (plain, gzip or bzip2), closed when the block ends."""
    with open_binary(path) as fh:
        yield JsonStream(fh, str(path), block)
