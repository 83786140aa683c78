"""Rules on single values that every table shares: enums, integer ranges, empty ids, control characters.

- Integers the store keeps as 32-bit ``INTEGER`` (ranks, grades, k) are checked against that range *before*
  any cast, so a rank of 2^40 is a finding naming its line, never a DuckDB conversion error.
- An id is a key: an empty one (``"chunk_id": ""``) would pass "each result needs a chunk_id" while naming
  nothing, so it is refused.
- Control characters (ESC, bidi overrides, C1, newlines) in ids are refused: a newline in an id breaks the TREC
  layout and every one-line display. ``strict=False`` (``--allow-control-ids``) loads them with a warning and
  counts; they are shown escaped on every surface (see :mod:`ragtriage.safe_text`). In short text they warn.
"""

from __future__ import annotations

from ragtriage.contract.fields import INT_MAX, INT_MIN, Table
from ragtriage.contract.rules import Rule, enum_rules
from ragtriage.contract.staging import qident, sql_str
from ragtriage.safe_text import CONTROL_CLASS

#: Text fields checked for controls besides ids; TAB/LF/CR are ordinary there (long text is not scanned).
TEXT_FIELDS = ("query", "title", "note", "annotator")


def _re2(char_class: str) -> str:
    """A character class as RE2 escapes (``\\x{1b}``), so no raw control byte goes into the SQL text."""
    return "".join(c if c in "[]-" else f"\\x{{{ord(c):x}}}" for c in char_class)


#: RE2 pattern (for DuckDB's regexp functions) matching any character safe_text.visible rewrites.
ID_CONTROLS = _re2(CONTROL_CLASS)
# Controls without TAB, LF and CR, for text fields, which may hold line breaks.
_TEXT_CONTROLS = _re2(CONTROL_CLASS.replace("\x00-\x1f", "\x00-\x08\x0b\x0c\x0e-\x1f"))


def is_id(name: str) -> bool:
    return name == "id" or name.endswith("_id")


def range_rules(table: Table) -> list[Rule]:
    """Every int field within the 32-bit range the store keeps it in."""
    out = []
    for f in table.fields:
        if f.kind == "int":
            col = f"s.{qident(f.name)}"
            out.append(
                Rule(
                    f.name,
                    "out-of-range",
                    f"{col} IS NOT NULL AND ({col} > {INT_MAX} OR {col} < {INT_MIN})",
                    f"'{f.name} ' || {col} || ' is out of range ({INT_MIN}..{INT_MAX})'",
                )
            )
    return out


def empty_id_rule(field: str) -> Rule:
    col = f"s.{qident(field)}"
    return Rule(field, "empty-id", f"{col} = ''", f"'{field} is empty; give an id or leave the field out'")


CONTROLS_REFUSED = "refused by default; --allow-control-ids loads them with a warning"
CONTROLS_SHOWN = "they are shown escaped"


def control_message(field: str, *, refused: bool) -> str:
    """What a load says about controls in ``field``: refused (an id by default) or shown escaped (a warning)."""
    how = CONTROLS_REFUSED if refused else CONTROLS_SHOWN
    return f"{field} holds control characters (terminal escapes, bidi marks, line breaks); {how}"


def may_hold_controls(col: str) -> str:
    """SQL true for every value of ``col`` holding a character of either control class, and false for most
    others: the class's characters are all bytes below 0x20, 0x7f or non-ASCII, and a BLOB shown as text
    escapes exactly those bytes (and quotes and backslashes), so it grows. A regular expression per value costs
    more than this test, and only the values it lets through need one. A value with a non-ASCII character (more
    bytes than characters) goes to the expression at once: its escaped copy would cost more than the expression."""
    return f"(strlen({col}) <> length({col}) OR strlen(CAST(encode({col}) AS VARCHAR)) > strlen({col}))"


def control_rule(field: str, *, strict: bool, where: str = "TRUE") -> Rule:
    """Controls in ``field``: for an id an error unless ``strict`` is off, else a warning (``where`` narrows the
    rows)."""
    col = f"s.{qident(field)}"
    ident = is_id(field)
    pattern = ID_CONTROLS if ident else _TEXT_CONTROLS
    kind = "id" if ident else "text"
    refused = strict and ident
    matches = f"CASE WHEN {may_hold_controls(col)} THEN regexp_matches({col}, {sql_str(pattern)}) ELSE FALSE END"
    return Rule(
        field,
        f"control-in-{kind}",
        f"({where}) AND {matches}",
        sql_str(control_message(field, refused=refused)),
        "error" if refused else "warning",
    )


def field_rules(table: Table, *, strict: bool = True) -> list[Rule]:
    """Enum, range, empty-id and control-character rules of every field of ``table``."""
    out = [*enum_rules(table), *range_rules(table)]
    for f in table.fields:
        if f.kind == "string" and is_id(f.name):
            out += [empty_id_rule(f.name), control_rule(f.name, strict=strict)]
        elif f.kind == "string" and f.name in TEXT_FIELDS:
            out.append(control_rule(f.name, strict=strict))
    return out
