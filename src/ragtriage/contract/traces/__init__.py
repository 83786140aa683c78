"""Retriever spans from trace exports, staged as two tables every trace format shares.

- ``trc_spans``: one row per retrieval or rerank span: ``sid`` (its position in the load), ``file``, ``line``,
  ``trace_id``, ``span_id``, ``parent_id``, ``kind`` (RETRIEVER | RERANKER), ``query``, ``started`` (epoch ms),
  ``latency_ms``, ``error`` (status message or code when the span failed, else NULL), ``case_attr`` (the value of
  ``--case-id-attribute``), ``principal``, ``groups`` (VARCHAR[]) and ``resource`` (JSON object of the
  resource's attributes: service, model and index versions);
- ``trc_docs``: the span's ranked documents: ``sid``, ``role`` (``retrieved`` for a retriever, ``input``/``output``
  for a reranker), ``idx`` (0-based position as recorded; never re-sorted by score), ``document_id``,
  ``score_text`` (a score as written), ``score`` (DOUBLE: a score the reader read as a number, in place of
  ``score_text``), ``content``, ``metadata`` (JSON text), ``rank`` (1-based position by ``idx`` in the span's
  list, where the reader worked it out; else NULL and the run's staging ranks the list).

Formats, told from the content: OTLP/JSON export requests (camelCase or snake_case, one per file or one per line)
carrying OpenInference or OTel GenAI attributes (``otlp.py``); Phoenix's span Parquet (``phoenix.py``); Langfuse
observation exports, JSON or JSONL (``observations.py``). Span text is data: it is stored, never interpreted.
"""

from __future__ import annotations

from ragtriage.contract.traces.options import TraceOptions
from ragtriage.contract.traces.stage import TRACE_FORMATS, TracesStaged, stage_traces

__all__ = ["TRACE_FORMATS", "TraceOptions", "TracesStaged", "stage_traces"]
