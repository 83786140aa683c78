"""The data contract as data: every input table's fields, their types and which are required.

One definition feeds the validators (``contract/staging.py``: a reader per kind), the JSON Schemas shipped in the
package and docs/data-contract.md, so the three cannot drift apart. A field's kind is one of string, int, float,
bool, date, timestamp, string_list and object (kept as JSON text in the store).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragtriage.contract.limits import INT_MAX as INT_MAX  # re-exported: the readers import them from here
from ragtriage.contract.limits import INT_MIN as INT_MIN
from ragtriage.contract.relevance import DEFAULT_RELEVANCE_THRESHOLD


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    required: bool = False
    enum: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Table:
    name: str
    fields: tuple[Field, ...]
    description: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def required(self) -> list[str]:
        return [f.name for f in self.fields if f.required]

    def get(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)


STAGES = ("candidate", "final")
UNITS = ("chunk", "document", "span")
BEHAVIORS = ("evidence", "empty", "below_threshold", "insufficient_evidence")
EVENT_STATUSES = ("ok", "insufficient_evidence", "error")
DOC_STATUSES = ("current", "archived")
SPLITS = ("dev", "holdout")

DATASET = Table(
    "dataset",
    (
        Field("name", "string", True),
        Field("version", "string", True),
        Field(
            "unit",
            "string",
            True,
            UNITS,
            "evidence unit that metrics count: chunk ids, document ids, or evidence spans (docs/spans.md)",
        ),
        Field(
            "relevance_threshold",
            "int",
            description=f"grades >= this count as relevant (default {DEFAULT_RELEVANCE_THRESHOLD})",
        ),
        Field("grade_scale", "object", description='{"min": 0, "max": 3, "rubric": {"0": "irrelevant", ...}}'),
        Field("corpus_snapshot", "string"),
        Field("created_at", "string"),
        Field("rubric_version", "string"),
        Field("acl_required", "bool", description="every unit must carry an acl; an acl-less unit leaks"),
    ),
    "dataset.json: identity of the test set and how its grades are read",
)

CASES = Table(
    "cases",
    (
        Field("id", "string", True),
        Field("query", "string", True),
        Field("answerable", "bool", description="default true"),
        Field("expected_behavior", "string", False, BEHAVIORS, "required when answerable is false"),
        Field("principal", "object", description='{"id": ..., "groups": [...], "tenant": ...}'),
        Field("filters", "object", description="tenant, language, region, product, effective_on, doc_type, ..."),
        Field("split", "string", False, SPLITS),
        Field("source_family", "string"),
        Field("query_type", "string"),
        Field("language", "string"),
        Field("tags", "string_list"),
        Field("critical", "bool"),
        Field("expected_scope", "string"),
    ),
    "one row per test question",
)

LABELS = Table(
    "labels",
    (
        Field("case_id", "string", True),
        Field("document_id", "string", True),
        Field("chunk_id", "string"),
        Field("section_id", "string"),
        Field("start", "int", description="unit span: first character of the evidence (code points, from 0)"),
        Field("end", "int", description="unit span: the character after the evidence (end exclusive)"),
        Field("grade", "int", True, description="integer on the dataset's grade scale"),
        Field("annotator", "string", description="default 'default'; several per case and unit allowed"),
        Field("note", "string"),
    ),
    "graded relevance judgements",
)

DOCUMENTS = Table(
    "documents",
    (
        Field("document_id", "string", True),
        Field("chunk_id", "string", description="unique when given"),
        Field("section_id", "string"),
        Field("title", "string"),
        Field("text", "string"),
        Field("doc_type", "string"),
        Field("source_system", "string"),
        Field("language", "string"),
        Field("region", "string"),
        Field("product", "string"),
        Field("tenant", "string"),
        Field("acl", "string_list", description="groups allowed to see the unit"),
        Field("status", "string", False, DOC_STATUSES),
        Field("effective_from", "date"),
        Field("effective_to", "date"),
        Field("updated_at", "timestamp"),
        Field("chunk_kind", "string", description="body | heading | table | list | ..."),
        Field("version", "string"),
    ),
    "corpus snapshot manifest, one row per evidence unit",
)

RUN = Table(
    "run",
    (
        Field("run_id", "string", True),
        Field("created_at", "string"),
        Field("dataset_version", "string"),
        Field("corpus_version", "string"),
        Field("index_version", "string"),
        Field("embedding_model", "string"),
        Field("chunking", "string"),
        Field("reranker", "string"),
        Field("k", "int", True, description="final cutoff the system returns"),
        Field("candidate_k", "int", description="depth of the candidate stage before reranking"),
        Field("filters_applied", "object"),
        Field("system", "object"),
    ),
    "run.json: the retrieval configuration that produced a run",
)

RESULTS = Table(
    "results",
    (
        Field("case_id", "string", True),
        Field("stage", "string", False, STAGES, "default final"),
        Field("rank", "int", True, description=">= 1"),
        Field("document_id", "string", True),
        Field("chunk_id", "string"),
        Field("start", "int", description="the chunk's first character in its document (unit span: required)"),
        Field("end", "int", description="the character after the chunk (end exclusive)"),
        Field("score", "float"),
        Field("snippet", "string"),
        Field("metadata", "object"),
    ),
    "recorded ranked results",
)

EVENTS = Table(
    "events",
    (
        Field("case_id", "string", True),
        Field("latency_ms", "float"),
        Field("timed_out", "bool"),
        Field("empty", "bool"),
        Field("fallback", "bool"),
        Field("status", "string", False, EVENT_STATUSES),
        Field("error", "string"),
    ),
    "per-case serving events (latency, timeouts, fallbacks)",
)

CHUNK_MAP = Table(
    "chunk_map",
    (
        Field("chunk_id", "string", True),
        Field("document_id", "string", True),
        Field("start", "int", True, description="the chunk's first character in its document"),
        Field("end", "int", True, description="the character after the chunk (end exclusive)"),
    ),
    "import-labels --chunk-map: where each chunk of an old chunking sits, to carry its labels over as spans",
)

TABLES: dict[str, Table] = {t.name: t for t in (DATASET, CASES, LABELS, DOCUMENTS, RUN, RESULTS, EVENTS)}


def json_schema(table: Table) -> dict[str, object]:
    """A draft 2020-12 JSON Schema for one row (or the manifest) of ``table``."""
    json_types: dict[str, dict[str, object]] = {
        "string": {"type": "string"},
        "int": {"type": "integer"},
        "float": {"type": "number"},
        "bool": {"type": "boolean"},
        "date": {"type": "string", "format": "date"},
        "timestamp": {"type": "string", "format": "date-time"},
        "string_list": {"type": "array", "items": {"type": "string"}},
        "object": {"type": "object"},
    }
    props: dict[str, object] = {}
    for f in table.fields:
        spec: dict[str, object] = dict(json_types[f.kind])
        if f.enum:
            spec["enum"] = list(f.enum)
        if f.description:
            spec["description"] = f.description
        if not f.required:
            spec = {"anyOf": [spec, {"type": "null"}], **({"description": f.description} if f.description else {})}
        props[f.name] = spec
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"ragtriage/{table.name}.schema.json",
        "title": table.name,
        "description": table.description,
        "type": "object",
        "properties": props,
        "required": table.required(),
        "additionalProperties": True,
    }
