"""Dotted field paths (``output.documents``, ``metadata.case_id``) as DuckDB JSON paths, every key quoted so a
key holding dots or quotes is still one key only when the user escapes nothing."""

from __future__ import annotations


def json_path(dotted: str) -> str:
    """``a.b.0.c`` -> ``$."a"."b"[0]."c"`` (a part made of digits is an array index)."""
    out = "$"
    for part in dotted.split("."):
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += '."' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return out
