"""Building blocks of the sample corpus: documents made of sections made of chunks, each chunk addressable by key.

The generator writes prose once and keeps, for every chunk, the key a case can point at (``travel24.hotel``), so
labels are derived from what the generator knows each chunk says rather than typed in by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TENANT_A = "halvorsen"
TENANT_B = "kestrel"


@dataclass
class Chunk:
    document_id: str
    chunk_id: str
    section_id: str
    title: str
    text: str
    chunk_kind: str
    key: str | None


@dataclass
class Doc:
    """One corpus document; ``alias`` prefixes the keys of its chunks."""

    alias: str
    document_id: str
    title: str
    doc_type: str
    source_system: str
    acl: list[str]
    updated_at: str
    version: str = "1"
    language: str = "en"
    region: str = "global"
    product: str | None = None
    tenant: str = TENANT_A
    status: str = "current"
    effective_from: str | None = None
    effective_to: str | None = None
    chunks: list[Chunk] = field(default_factory=list)
    _section: int = 0

    def _add(self, kind: str, text: str, key: str | None) -> Chunk:
        chunk = Chunk(
            document_id=self.document_id,
            chunk_id=f"{self.document_id}#{len(self.chunks) + 1:02d}",
            section_id=f"{self.document_id}/s{self._section:02d}",
            title=self.title,
            text=" ".join(text.split()) if kind not in ("table", "list") else text.strip(),
            chunk_kind=kind,
            key=f"{self.alias}.{key}" if key else None,
        )
        self.chunks.append(chunk)
        return chunk

    def section(self, heading: str, key: str | None = None) -> Doc:
        """Open a new section with its heading chunk (key ``<key>.h`` when given)."""
        self._section += 1
        self._add("heading", heading, f"{key}.h" if key else None)
        return self

    def body(self, text: str, key: str | None = None) -> Doc:
        self._add("body", text, key)
        return self

    def table(self, header: list[str], rows: list[list[str]], key: str | None = None, caption: str = "") -> Doc:
        lines = ([caption] if caption else []) + ["| " + " | ".join(header) + " |"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        self._add("table", "\n".join(lines), key)
        return self

    def items(self, items: list[str], key: str | None = None, intro: str = "") -> Doc:
        lines = ([intro] if intro else []) + [f"- {i}" for i in items]
        self._add("list", "\n".join(lines), key)
        return self

    def rows(self) -> list[dict[str, object]]:
        """Manifest rows in the contract's ``documents`` format, in chunk order."""
        return [
            {
                "document_id": c.document_id,
                "chunk_id": c.chunk_id,
                "section_id": c.section_id,
                "title": self.title,
                "text": c.text,
                "doc_type": self.doc_type,
                "source_system": self.source_system,
                "language": self.language,
                "region": self.region,
                "product": self.product,
                "tenant": self.tenant,
                "acl": list(self.acl),
                "status": self.status,
                "effective_from": self.effective_from,
                "effective_to": self.effective_to,
                "updated_at": self.updated_at,
                "chunk_kind": c.chunk_kind,
                "version": self.version,
            }
            for c in self.chunks
        ]


class Corpus:
    """All documents plus the key → chunk registry the case builder resolves against."""

    def __init__(self) -> None:
        self.docs: list[Doc] = []
        self.by_key: dict[str, Chunk] = {}
        self.doc_of: dict[str, Doc] = {}

    def new(self, alias: str, document_id: str, title: str, **kw: object) -> Doc:
        doc = Doc(alias=alias, document_id=document_id, title=title, **kw)  # type: ignore[arg-type]
        self.docs.append(doc)
        return doc

    def seal(self) -> None:
        """Index every keyed chunk; a duplicate key is a generator bug, so it raises."""
        for doc in self.docs:
            self.doc_of[doc.document_id] = doc
            for c in doc.chunks:
                if c.key is None:
                    continue
                if c.key in self.by_key:
                    raise ValueError(f"duplicate chunk key {c.key}")
                self.by_key[c.key] = c

    def chunk(self, key: str) -> Chunk:
        try:
            return self.by_key[key]
        except KeyError:
            raise KeyError(f"no chunk with key {key!r}") from None

    def heading_of(self, chunk: Chunk) -> Chunk | None:
        doc = self.doc_of[chunk.document_id]
        heads = [c for c in doc.chunks if c.section_id == chunk.section_id and c.chunk_kind == "heading"]
        return heads[0] if heads and heads[0].chunk_id != chunk.chunk_id else None

    def chunks(self) -> list[Chunk]:
        return [c for d in self.docs for c in d.chunks]
