"""Which key of a span document's ``document.metadata`` object fills which corpus-manifest field.

The defaults cover what the instrumentations put there: LlamaIndex nodes carry ``file_name``, ``file_path``,
``file_type``, ``last_modified_date`` and ``ref_doc_id``; LangChain documents ``source``, ``title`` and whatever
the loader adds; teams add ``tenant``, ``acl``/``allowed_groups`` and validity dates themselves. A field takes
the value of the first key present (not null) in its list. ``--trace-doc-meta FIELD=KEY`` replaces a field's
list with the one key the team uses.

A key is a dotted path into the object: ``access.groups`` reads ``{"access": {"groups": [...]}}`` (a part made of
digits also indexes an array: ``owners.0``). A key that itself holds a dot is written in double quotes, as one
part: ``"security.acl"`` reads ``{"security.acl": [...]}`` (inside the quotes, ``\\"`` is a quote and ``\\\\`` a
backslash). The path becomes a JSON pointer (``metadata_pointer``), the one way the load and ``validate`` read it.
"""

from __future__ import annotations

DOC_METADATA_KEYS: dict[str, tuple[str, ...]] = {
    "document_id": ("document_id", "doc_id", "ref_doc_id"),  # chunk unit: the chunk's document
    "title": ("title", "file_name", "file_path", "source"),
    "doc_type": ("doc_type", "file_type"),
    "source_system": ("source_system",),
    "language": ("language",),
    "region": ("region",),
    "product": ("product",),
    "tenant": ("tenant", "tenant_id"),
    "acl": ("acl", "allowed_groups"),
    "status": ("status",),
    "effective_from": ("effective_from", "valid_from"),
    "effective_to": ("effective_to", "valid_to", "expires_at"),
    "updated_at": ("updated_at", "last_modified", "last_modified_date"),
    "version": ("version",),
}
"""Manifest field -> the metadata keys read for it, first present wins."""

VERDICT_FIELDS = ("tenant", "acl", "status", "effective_from", "effective_to", "updated_at")
"""Fields a check's verdict reads (leakage, staleness, label freshness): a value of the wrong type is refused,
never dropped, because dropping it could turn a leak or a stale result into a pass."""


def metadata_path(key: str) -> tuple[str, ...]:
    """The parts of a dotted metadata key (see the module docstring); a ``ValueError`` says what is wrong."""
    parts: list[str] = []
    part, quoted, closed, escaped = "", False, False, False
    for ch in key:
        if escaped:
            part, escaped = part + ch, False
        elif quoted and ch == "\\":
            escaped = True
        elif ch == '"' and (quoted or not part):
            quoted, closed = not quoted, quoted
        elif ch == "." and not quoted:
            if not part and not closed:
                raise ValueError(f"metadata key {key!r} has an empty part; write a key holding a dot in quotes")
            parts.append(part)
            part, closed = "", False
        elif closed:
            raise ValueError(f"metadata key {key!r}: a quoted part ends at its closing quote; put a dot after it")
        else:
            part += ch
    if quoted or escaped:
        raise ValueError(f"metadata key {key!r} has an unclosed quote")
    if not part and not closed:
        raise ValueError(f"metadata key {key!r} has an empty part; write a key holding a dot in quotes")
    return (*parts, part)


def metadata_pointer(key: str) -> str:
    """The JSON pointer (RFC 6901) of a dotted metadata key: ``access.groups`` -> ``/access/groups``."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in metadata_path(key))


def parse_doc_meta(specs: tuple[str, ...] | list[str]) -> tuple[tuple[str, str], ...]:
    """``FIELD=KEY`` option values as (field, key) pairs; an unknown field or an empty key is a ``ValueError``."""
    out = []
    for spec in specs:
        name, sep, key = spec.partition("=")
        name, key = name.strip(), key.strip()
        if not sep or not key:
            raise ValueError(f"--trace-doc-meta takes FIELD=KEY (such as acl=allowed_groups), not {spec!r}")
        if name not in DOC_METADATA_KEYS:
            raise ValueError(f"--trace-doc-meta: unknown field {name!r}; one of {', '.join(DOC_METADATA_KEYS)}")
        try:
            metadata_path(key)
        except ValueError as exc:
            raise ValueError(f"--trace-doc-meta {spec!r}: {exc}") from exc
        out.append((name, key))
    return tuple(out)


def metadata_keys(overrides: tuple[tuple[str, str], ...] = ()) -> dict[str, tuple[str, ...]]:
    """The key list of every field, with the user's overrides in place of the defaults."""
    keys = dict(DOC_METADATA_KEYS)
    for name, key in overrides:
        keys[name] = (key,)
    return keys


def metadata_json(text: str) -> str:
    """SQL: a document's ``document.metadata`` text (``trc_docs.metadata``) as the JSON a trace run stores under
    ``document``: the JSON it holds, else the text itself as a JSON string."""
    return f"CASE WHEN json_valid({text}) THEN CAST({text} AS JSON) ELSE to_json({text}) END"


def metadata_object(m: str) -> str:
    """SQL: the metadata JSON ``m`` with an object written as a JSON string (metadata serialised twice, as a span
    DataFrame may hold it, or an attribute holding the JSON text of an object) read as that object."""
    inner = f"CAST(json_extract_string({m}, '$') AS JSON)"
    return f"""CASE WHEN json_type({m}) = 'VARCHAR' AND json_valid(json_extract_string({m}, '$'))
                     AND json_type({inner}) = 'OBJECT' THEN {inner} ELSE {m} END"""
