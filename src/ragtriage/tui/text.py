"""How the TUI writes data on screen: every string through the one sanitiser, numbers never cut, ids in natural
order.

Data strings (queries, titles, ids, slice values, notes) are untrusted: :func:`lit` passes them through
:func:`ragtriage.safe_text.visible` and wraps them in ``rich.text.Text``, so an escape sequence shows as ``␛[2J``
and ``[bold]`` prints as typed. Numbers are formatted here once for every view: four decimals, or a compact
form for large magnitudes, so a column never shows ``0.…``.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
from rich.cells import cell_len
from rich.text import Text

from ragtriage.app.browse.reads import natural_order
from ragtriage.safe_text import visible

ELLIPSIS = "…"


def lit(value: Any, style: str = "") -> Text:
    """A data value as inert text (controls made visible, never markup)."""
    return Text(visible(value), style=style)


def num(value: Any) -> str:
    """A number as the views print it: integers as they are, floats with 4 decimals (compact past 1e6)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if abs(value) >= 1e6:
            return f"{value:.4g}"
        return f"{value:.4f}"
    return visible(value)


def delta(value: float | None) -> str:
    """A difference with its sign (``+0.1250``, ``-0.0417``, ``±0`` for an exact tie)."""
    if value is None:
        return "—"
    if value == 0:
        return "±0"
    return f"{value:+.4f}"


def middle(text: str, width: int) -> str:
    """``text`` cut in the middle to ``width`` cells (ids differ at both ends: ``pol-travel-2…24#06``)."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    if width == 1:
        return ELLIPSIS
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def wrap_lines(text: str, width: int, max_lines: int) -> list[str]:
    """``text`` folded at ``width`` into at most ``max_lines`` lines, the last one ellipsised when more remain."""
    words = text.split(" ")
    lines: list[str] = []
    line = ""
    for word in words:
        while cell_len(word) > width:  # a very long token (an id) is folded, not allowed to push the line out
            room = width - cell_len(line) - (1 if line else 0)
            if room <= 0:
                lines.append(line)
                line = ""
                continue
            line = f"{line} {word[:room]}" if line else word[:room]
            word = word[room:]
            lines.append(line)
            line = ""
        candidate = f"{line} {word}" if line else word
        if cell_len(candidate) <= width:
            line = candidate
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        last = lines[-1]
        lines[-1] = last + ELLIPSIS if cell_len(last) < width else last[: width - 1] + ELLIPSIS
    return lines or [""]


def sort_table(table: pa.Table, column: str, *, descending: bool = False) -> pa.Table:
    """Sort for a list view: id and text columns naturally, numbers by value (nulls last)."""
    if pa.types.is_string(table.schema.field(column).type) or pa.types.is_large_string(table.schema.field(column).type):
        return natural_order(table, column, descending=descending)
    return table.sort_by([(column, "descending" if descending else "ascending")])
