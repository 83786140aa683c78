"""What the user said about their traces: which attributes hold the case id and the principal, and field paths
that override a format's own names (Langfuse fixes no document schema)."""

from __future__ import annotations

from dataclasses import dataclass

from ragtriage.contract.traces.doc_metadata import parse_doc_meta

REPEATED = ("first", "last", "all")


@dataclass(frozen=True)
class TraceOptions:
    """``query``/``docs``/``doc_id``/``score``/``content``: dotted paths (``input.query``, ``output.documents``,
    ``metadata.doc_id``); for OTLP spans ``query`` and ``docs`` name attributes (``docs`` holding a JSON list).
    ``case_id_attribute``, ``principal_attribute``, ``groups_attribute``: attribute keys (OTLP/Phoenix) or paths
    (Langfuse). ``repeated``: which span of a repeated query is the case's list (``all``: the first, with every
    span kept as an event of its own). ``doc_meta``: (manifest field, metadata key) pairs replacing the default
    keys of ``doc_metadata.DOC_METADATA_KEYS`` (``--trace-doc-meta``)."""

    query: str | None = None
    docs: str | None = None
    doc_id: str | None = None
    score: str | None = None
    content: str | None = None
    case_id_attribute: str | None = None
    principal_attribute: str | None = None
    groups_attribute: str | None = None
    repeated: str = "first"
    doc_meta: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.repeated not in REPEATED:
            raise ValueError(f"--repeated must be one of {', '.join(REPEATED)}, not {self.repeated!r}")
        parse_doc_meta([f"{name}={key}" for name, key in self.doc_meta])


def json_path(dotted: str) -> str:
    """A dotted field path as a DuckDB JSON path, every key quoted (a key holding quotes is still one key, and the
    user escapes nothing): ``a.b.0.c`` -> ``$."a"."b"[0]."c"`` (a part made of digits is an array index)."""
    out = "$"
    for part in dotted.split("."):
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += '."' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return out
