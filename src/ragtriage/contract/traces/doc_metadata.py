"""Which key of a span document's ``document.metadata`` object fills which corpus-manifest field.

The defaults cover what the instrumentations put there: LlamaIndex nodes carry ``file_name``, ``file_path``,
``file_type``, ``last_modified_date`` and ``ref_doc_id``; LangChain documents ``source``, ``title`` and whatever
the loader adds; teams add ``tenant``, ``acl``/``allowed_groups`` and validity dates themselves. A field takes
the value of the first key present (not null) in its list. ``--trace-doc-meta FIELD=KEY`` replaces a field's
list with the one key the team uses.

Only a top-level key of the metadata object is read: ``{"security": {"acl": [...]}}`` is not looked into.
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
        out.append((name, key))
    return tuple(out)


def metadata_keys(overrides: tuple[tuple[str, str], ...] = ()) -> dict[str, tuple[str, ...]]:
    """The key list of every field, with the user's overrides in place of the defaults."""
    keys = dict(DOC_METADATA_KEYS)
    for name, key in overrides:
        keys[name] = (key,)
    return keys
