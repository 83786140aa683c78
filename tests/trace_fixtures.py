"""Trace exports written the way the real exporters write them: OTLP requests built with ``opentelemetry-proto``
and serialised by protobuf's JSON mapping (camelCase, or snake_case with ``preserving_proto_field_name``, ids in
base64), attribute names from ``openinference-semantic-conventions`` and OTel's GenAI conventions, never retyped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import DocumentAttributes as Doc
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import RerankerAttributes as Rerank
from openinference.semconv.trace import SpanAttributes as Attr
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai

Docs = list[tuple[str, float, str]]  # (id, score, content)


@dataclass
class Retrieval:
    """One retrieval as an instrumentation records it; ``rerank`` (output documents) adds a reranker span whose
    input is ``docs``, a sibling of the retriever under one parent span."""

    query: str
    docs: Docs
    trace: int
    start_ns: int = 1_700_000_000_000_000_000
    latency_ms: float = 12.5
    error: str | None = None
    rerank: Docs | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    genai: bool = False
    # a document's ``document.metadata`` by its id: a dict (written as JSON) or the raw string to write; else
    # ``{"source": <id before '#'>}``
    metadata: dict[str, Any] = field(default_factory=dict)


def _value(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, list):
        return AnyValue(array_value=ArrayValue(values=[_value(x) for x in v]))
    return AnyValue(string_value=str(v))


def _kv(attrs: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in attrs.items()]


def _docs(prefix: str, docs: Docs, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (did, score, content) in enumerate(docs):
        out[f"{prefix}.{i}.{Doc.DOCUMENT_ID}"] = did
        out[f"{prefix}.{i}.{Doc.DOCUMENT_SCORE}"] = score
        out[f"{prefix}.{i}.{Doc.DOCUMENT_CONTENT}"] = content
        meta = (metadata or {}).get(did, {"source": did.split("#")[0]})
        out[f"{prefix}.{i}.{Doc.DOCUMENT_METADATA}"] = meta if isinstance(meta, str) else json.dumps(meta)
    return out


def spans(r: Retrieval) -> list[Span]:
    tid = r.trace.to_bytes(16, "big")
    parent = (r.trace * 4).to_bytes(8, "big")
    end = r.start_ns + int(r.latency_ms * 1e6)
    status = Status(code=Status.STATUS_CODE_ERROR, message=r.error) if r.error else Status()
    if r.genai:
        attrs = {
            genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.RETRIEVAL.value,
            genai.GEN_AI_RETRIEVAL_QUERY_TEXT: r.query,
            genai.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps([{"id": d, "score": s} for d, s, _ in r.docs]),
            genai.GEN_AI_DATA_SOURCE_ID: "kb-1",
        }
    else:
        attrs = {Attr.OPENINFERENCE_SPAN_KIND: Kind.RETRIEVER.value, Attr.INPUT_VALUE: r.query}
        attrs |= _docs(Attr.RETRIEVAL_DOCUMENTS, r.docs, r.metadata)
    out = [
        Span(trace_id=tid, span_id=parent, name="query", start_time_unix_nano=r.start_ns, end_time_unix_nano=end),
        Span(trace_id=tid, span_id=(r.trace * 4 + 1).to_bytes(8, "big"), parent_span_id=parent, name="retrieve",
             start_time_unix_nano=r.start_ns, end_time_unix_nano=end, attributes=_kv(attrs | r.attrs),
             status=status),
    ]  # fmt: skip
    if r.rerank is not None:
        k = {Attr.OPENINFERENCE_SPAN_KIND: Kind.RERANKER.value, Rerank.RERANKER_QUERY: r.query}
        k |= _docs(Rerank.RERANKER_INPUT_DOCUMENTS, r.docs) | _docs(Rerank.RERANKER_OUTPUT_DOCUMENTS, r.rerank)
        out.append(Span(trace_id=tid, span_id=(r.trace * 4 + 2).to_bytes(8, "big"), parent_span_id=parent,
                        name="rerank", start_time_unix_nano=end, end_time_unix_nano=end + 1_000_000,
                        attributes=_kv(k)))  # fmt: skip
    return out


def request(retrievals: list[Retrieval], resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    res = Resource(attributes=_kv(resource or {"service.name": "rag-api"}))
    scope = ScopeSpans(spans=[s for r in retrievals for s in spans(r)])
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(resource=res, scope_spans=[scope])])


def write_otlp(path: Path, retrievals: list[Retrieval], *, snake: bool = False, per_line: int = 0,
               resource: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """One request per file (pretty-printed), or ``per_line`` retrievals per request, one request per line (the
    OTel Collector file exporter's layout)."""

    def dump(req: ExportTraceServiceRequest, indent: int | None) -> str:
        return json.dumps(MessageToDict(req, preserving_proto_field_name=snake), indent=indent)

    if per_line:
        chunks = [retrievals[i : i + per_line] for i in range(0, len(retrievals), per_line)]
        path.write_text("".join(dump(request(c, resource), None) + "\n" for c in chunks))
    else:
        path.write_text(dump(request(retrievals, resource), 2))
    return path
