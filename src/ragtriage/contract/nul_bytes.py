"""A NUL byte in a text input is refused, in every reader, plain or compressed, on any line (a header and a
comment too): a text file holds none, so one means a binary file, a corrupt one or UTF-16 without its byte-order
mark, and DuckDB's readers would otherwise cut a value at it, load it as an id, or skip its line unseen.

The rule is applied where every text input is read through once (``compression.scan``); the finding names the
file, the line and the field: the JSON key before the NUL on a JSON line, else the column it falls in (tab-,
comma- or whitespace-separated as the line and the file name say)."""

from __future__ import annotations

import re

from ragtriage.safe_text import visible

CODE = "encoding"  # the file cannot be read as text: readers stop at it, as at a UTF-16 file
_JSON_KEY = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:')
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?')
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")


def nul_message(comp: str | None) -> str:
    text = f"the decompressed {comp} text" if comp else "the text"
    return f"a NUL byte in {text}: not a text file, or corrupt (saved as UTF-16? save it as UTF-8)"


def nul_field(line: bytes, at: int, plain_name: str) -> str | None:
    """The field of ``line`` holding the NUL at byte ``at``; None when the line before it is not known."""
    before = line[:at]
    name = plain_name.lower()
    if name.endswith(_JSON_SUFFIXES) or line.lstrip()[:1] in (b"{", b"["):
        return _json_field(line, before)
    if name.endswith(".toml"):
        key, eq, _ = before.partition(b"=")
        return visible(key.strip().decode("utf-8", errors="replace")) if eq else "key"
    if b"\t" in line:
        column = before.count(b"\t") + 1
    elif name.endswith(".csv"):
        column = before.count(b",") + 1
    else:  # TREC-style: columns split by runs of spaces
        words = before.split()
        column = len(words) + (0 if before[-1:].strip() else 1)
    return f"column {column}"


def _json_field(line: bytes, before: bytes) -> str | None:
    """A key holding the NUL itself, else the last key before it (whose value holds it)."""
    strings = list(_JSON_STRING.finditer(before))
    last = strings[-1] if strings else None
    if last is not None and last.end() == len(before) and (len(last.group()) == 1 or last.group()[-1:] != b'"'):
        key = _JSON_KEY.match(line, last.start())  # the NUL is inside this string: is it a key?
        if key is not None:
            return visible(key.group(1).decode("utf-8", errors="replace"))
    keys = _JSON_KEY.findall(before)
    return visible(keys[-1].decode("utf-8", errors="replace")) if keys else None
