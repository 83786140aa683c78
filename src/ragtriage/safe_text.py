"""The one sanitiser for untrusted text: every data-derived string passes here before a person sees it.

Queries come from support logs, titles from a crawler, ids and run ids from other people's jobs. Any of them can
hold terminal escapes (``ESC[2J`` clears a screen, OSC 8 makes a link, OSC 52 writes the clipboard), bidi
controls (U+202E reverses what follows) or other control bytes. Shown raw, they act on the reader's terminal; so
every output surface (TUI, CLI tables and messages, Markdown, JUnit XML, HTML, CSV) shows them as visible
escapes instead, and the stored value is never touched:

- C0 controls and DEL become their Unicode control pictures (``\\x1b`` shows as ``␛``, so ``ESC[2J`` reads
  ``␛[2J``); TAB and LF too, unless the surface keeps line structure (``keep_newlines``);
- C1 controls (U+0080–U+009F) become ``\\x9b``-style escapes (no picture exists for them);
- bidi and zero-width format controls become ``\\u202e``-style escapes.

Markup is a separate matter: this module makes text inert for a terminal; rendering it as plain text (Rich
``Text``, ``markup=False``) is each surface's job, and HTML/XML writers still escape ``<`` and ``&``.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Arrow only for the column helpers: a CLI that prints one line need not import it
    import pyarrow as pa

# Bidi embeddings/overrides/isolates, marks, and zero-width characters that change what a reader sees.
_FORMAT_CONTROLS = "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"

#: A character class matching every character :func:`visible` rewrites (LF and TAB included).
CONTROL_CLASS = "[\x00-\x1f\x7f-\x9f" + _FORMAT_CONTROLS + "]"
_CONTROL_RE = re.compile(CONTROL_CLASS)
_CONTROL_NO_NEWLINE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _FORMAT_CONTROLS + "]")


def _picture(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (␛ for ESC)
    if code == 0x7F:
        return "\u2421"  # ␡
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


_PICTURES = {ch: _picture(ch) for ch in [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))] + list(_FORMAT_CONTROLS)}


def visible(value: object, *, keep_newlines: bool = False) -> str:
    """``value`` as text with every control character shown as a visible escape (None shows as empty).

    ``keep_newlines`` keeps LF and TAB as they are, for surfaces that wrap multi-line text (a note, a long query);
    CR is always made visible, since a lone CR rewrites the start of the line.
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    pattern = _CONTROL_NO_NEWLINE_RE if keep_newlines else _CONTROL_RE
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: _PICTURES[m.group(0)], text)


#: A string cell a spreadsheet could evaluate: this prefix, unless it is a plain number (OWASP's CSV injection:
#: ``=``, ``+``, ``@``, TAB, CR, LF, ``-`` and the fullwidth forms some spreadsheets fold to ASCII).
FORMULA_START = "^[=+@\t\r\n\uff1d\uff0b\uff0d\uff20-]"
NUMBER = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"
_FORMULA_RE = re.compile(FORMULA_START)
_NUMBER_RE = re.compile(NUMBER)


def needs_quote(cell: str) -> bool:
    """Whether a spreadsheet would treat ``cell`` as a formula (a signed number such as ``-0.5`` is not one)."""
    return _FORMULA_RE.match(cell) is not None and _NUMBER_RE.match(cell) is None


def neutralise_cell(cell: str) -> str:
    """One cell as it is written: apostrophe-led when formula-like."""
    return "'" + cell if needs_quote(cell) else cell


_MARKDOWN_ESCAPES = str.maketrans(
    {"\\": "\\\\", "|": "\\|", "`": "\\`", "[": "\\[", "]": "\\]", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
)


#: An interval of two numbers (``[+0.0402, +0.1253]``): brackets that hold no text are no link, so they stay.
_INTERVAL_RE = re.compile(r"\[[+-]?\d+(\.\d+)?, ?[+-]?\d+(\.\d+)?\]")


def markdown_cell(value: object) -> str:
    """``value`` for a Markdown table cell or inline text, the one Markdown rule of every writer: controls
    visible (so no line break ends a row), a formula-like cell apostrophe-led as in a CSV, then ``\\``, ``|``,
    backticks and brackets (but an interval of two numbers) escaped and HTML's ``<``, ``>`` and ``&`` as entities,
    so a query can neither end the cell, nor open a code span or a link, nor inject HTML into a pull-request
    comment."""
    text = visible(value)
    return text if _INTERVAL_RE.fullmatch(text) else neutralise_cell(text).translate(_MARKDOWN_ESCAPES)


def html_text(value: object) -> str:
    """``value`` for HTML text or an attribute: controls visible (line breaks kept), then ``& < > " '`` escaped.
    The one way an HTML report shows untrusted text."""
    return html.escape(visible(value, keep_newlines=True), quote=True)


def has_controls(value: str) -> bool:
    """Whether ``value`` holds any character :func:`visible` would rewrite."""
    return _CONTROL_RE.search(value) is not None


def is_string_type(kind: pa.DataType) -> bool:
    """Every Arrow string flavour (string, large_string, string_view) and dictionaries of them."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return is_string_type(kind.value_type)
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind))


def visible_array(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """:func:`visible` over an Arrow string column, vectorised: untouched when no cell holds a control."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type) or pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    hits = pc.match_substring_regex(column, CONTROL_CLASS)
    if not pc.any(hits).as_py():
        return column
    present = {ch for ch in _PICTURES if pc.any(pc.match_substring(column, ch)).as_py()}
    for ch in present:
        column = pc.replace_substring(column, ch, _PICTURES[ch])
    return column


def visible_table(table: pa.Table) -> pa.Table:
    """Every string column of ``table`` through :func:`visible_array`; other columns as they are."""
    import pyarrow as pa

    columns = [visible_array(c) if is_string_type(c.type) else c for c in table.columns]
    return pa.table(columns, names=table.column_names)
