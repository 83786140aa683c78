"""Stage any number of trace files (format told from the content) into ``trc_spans``/``trc_docs`` and check them:
each cause is one finding with its count and first lines, per file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.compression import head_bytes
from ragtriage.contract.errors import Cause, Finding, counted_causes, path_findings
from ragtriage.contract.json_stream import JsonStreamError
from ragtriage.contract.staging import encoding_findings, sql_str
from ragtriage.contract.traces import observations, otlp
from ragtriage.contract.traces.options import TraceOptions
from ragtriage.contract.traces.phoenix import as_frame, read_phoenix
from ragtriage.contract.traces.tables import create_tables, join_docs
from ragtriage.contract.trec import not_finite

TRACE_FORMATS = ("otlp", "phoenix", "langfuse")


@dataclass
class TracesStaged:
    """What reading the trace files found: findings, the spans kept per file, each file's format."""

    findings: list[Finding] = field(default_factory=list)
    spans: dict[str, int] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)


def trace_format(path: Path) -> str | None:
    head = head_bytes(path, 65536)
    if head.startswith(b"PAR1"):
        return "phoenix"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if otlp.is_otlp(text):
        return "otlp"
    if text.startswith(("{", "[")):
        return "langfuse"
    return None


def _long_line(f: Finding) -> bool:
    return f.code == "compression" and f.message.startswith("line longer than")


TraceSource = Path | str | Any
"""A trace file, or Phoenix's span DataFrame in memory (``phoenix.as_frame``)."""


def source_label(source: TraceSource, i: int) -> str:
    """How messages name a source: its path, or ``DataFrame #i`` (1-based) for one in memory."""
    return str(source) if isinstance(source, (str, Path)) else f"{type(source).__name__} #{i + 1}"


def _read_frame(con: duckdb.DuckDBPyConnection, frame: pa.Table, label: str, opts: TraceOptions,
                out: TracesStaged) -> None:  # fmt: skip
    out.formats[label] = "phoenix"
    try:
        read_phoenix(con, frame, opts, label)
    except duckdb.Error as exc:
        out.findings.append(Finding(label, None, None, "unreadable", str(exc).splitlines()[0]))


def _faults(path: Path, fmt: str | None) -> list[Finding]:
    # a JSON export with a line beyond the line readers' limit is streamed as one document, not refused
    return [f for f in encoding_findings(path) if f.severity == "error" and not (fmt and _long_line(f))]


def _read(con: duckdb.DuckDBPyConnection, path: Path, opts: TraceOptions, res: int, out: TracesStaged,
          digest: bool) -> int:  # fmt: skip
    label = str(path)
    unopenable = path_findings(path)  # before the format is sniffed: opening a FIFO would wait forever
    if unopenable:
        out.findings += unopenable
        return res
    fmt = trace_format(path)
    if fmt == "otlp":
        try:
            last = otlp.read_otlp_once(con, path, res, opts, digest)
        except duckdb.Error as exc:  # the load is lost: say what the scan finds first, as the usual way does
            bad = _faults(path, fmt)
            if not bad:
                out.formats[label] = fmt
                bad = [Finding(label, None, None, "unreadable", str(exc).splitlines()[0])]
            out.findings += bad
            return res
        if last is not None:
            out.formats[label] = fmt
            return last
    bad = _faults(path, fmt)
    if bad:
        out.findings += bad
        return res
    if fmt is None:
        msg = "not a trace export: expected OTLP/JSON (resourceSpans), a Phoenix span Parquet or Langfuse observations"
        out.findings.append(Finding(label, None, None, "unreadable", msg))
        return res
    out.formats[label] = fmt
    try:
        if fmt == "otlp":
            return otlp.read_otlp(con, path, res, opts)
        if fmt == "langfuse":
            observations.read_observations(con, path)
        else:
            read_phoenix(con, path, opts, label)
    except JsonStreamError as exc:
        at = f" (column {exc.column})" if exc.column is not None else ""
        out.findings.append(Finding(label, exc.line, None, "unreadable", f"{exc.message}{at}"))
    except duckdb.Error as exc:
        out.findings.append(Finding(label, None, None, "unreadable", str(exc).splitlines()[0]))
    return res


def stage_traces(
    con: duckdb.DuckDBPyConnection, paths: Sequence[TraceSource], opts: TraceOptions, digest: bool = False
) -> TracesStaged:
    """Read ``paths`` (files, or span DataFrames in memory) into ``trc_spans``/``trc_docs``; an unreadable file
    is an ``unreadable`` finding. ``digest``: the files' sha256 will be recorded (a load), so a reader that reads
    a file whole takes it on the way (``contract.digest.folded``)."""
    out = TracesStaged()
    create_tables(con)
    otlp.create_raw(con)
    observations.create_raw(con)
    res = 0
    for i, path in enumerate(paths):
        frame = as_frame(path)
        if frame is None:
            res = _read(con, Path(path), opts, res, out, digest)
        else:
            _read_frame(con, frame, source_label(path, i), opts, out)
    if any(f.severity == "error" for f in out.findings):  # a failed statement may have ended the transaction
        return out
    out.findings += observations.otlp_objects(con)
    if any(f.severity == "error" for f in out.findings):
        return out
    otlp.normalise_otlp(con, opts)
    observations.normalise_observations(con, opts)
    join_docs(con)
    out.findings += check_spans(con, out.formats)
    con.execute("DROP TABLE trc_faults")
    counts = con.execute("SELECT file, count(*) FROM trc_spans GROUP BY file").fetchall()
    out.spans = {str(f): int(n) for f, n in counts}
    for i, path in enumerate(paths):
        label = source_label(path, i)
        if not out.spans.get(label) and label in out.formats:
            msg = "no retriever spans (openinference.span.kind RETRIEVER/RERANKER, gen_ai.operation.name retrieval"
            msg += ", or the --trace-docs path); name the fields with --trace-query/--trace-docs"
            out.findings.append(Finding(label, None, None, "empty-file", msg))
    return out


_SPAN_CAUSES = [
    Cause("trace_id IS NULL OR span_id IS NULL", "span_id", "traceId/spanId", "missing-field", "a span without its trace or span id"),  # noqa: E501
    Cause("query IS NULL OR trim(query) = ''", "span_id", "query", "missing-field",
          "span {v} has no query text (input.value, reranker.query, gen_ai.retrieval.query.text or --trace-query)"),
    Cause("latency_ms < 0 AND bad_start IS NULL AND bad_end IS NULL", "latency_ms", "endTime", "bad-value",
          "the span ends before it starts ({v} ms)"),
    Cause("twice IS NOT NULL", "twice", "attributes", "duplicate-key",
          "the attribute {v} given twice in one span (which value is meant?)"),
    Cause("bad_groups IS NOT NULL", "bad_groups", "groups", "bad-value",
          "a groups value that is not a group name or a list of group names: {v}"),
    Cause("bad_principal IS NOT NULL", "bad_principal", "principal", "bad-value",
          "a principal that is not one id (a string or an integer): {v}"),
]  # fmt: skip
_TIMES = {"otlp": ("startTimeUnixNano", "endTimeUnixNano", "nanoseconds since 1970 (digits, within 64 bits)"),
          "langfuse": ("startTime", "endTime", "an ISO 8601 timestamp")}  # fmt: skip
"""Per format, the fields of a span's start and end time and what a time must be (else Phoenix's)."""


def _time_causes(fmt: str) -> list[Cause]:
    start, end, what = _TIMES.get(fmt, ("start_time", "end_time", "a timestamp"))
    return [Cause(f"bad_{x} IS NOT NULL", f"bad_{x}", name, "bad-value", f"{a} {x} time that is not {what}: {{v}}")
            for a, x, name in (("a", "start", start), ("an", "end", end))]  # fmt: skip


_INT_SCORE = "regexp_full_match(score_text, '[-+]?[0-9]+')"
_DOC_CAUSES = [
    Cause("document_id IS NULL OR document_id = ''", "span_id || ' #' || idx", "document.id", "missing-field",
          "a document without an id (span, position: {v}); name it with --trace-doc-id"),
    Cause(f"(score_text IS NOT NULL AND {not_finite('TRY_CAST(score_text AS DOUBLE)')}) "
          f"OR (score IS NOT NULL AND {not_finite('score')})", "coalesce(score_text, CAST(score AS VARCHAR))",
          "document.score", "bad-score",
          "a document score that is not a finite number: {v}"),
    Cause(f"score_text IS NOT NULL AND {_INT_SCORE} AND abs(TRY_CAST(score_text AS DOUBLE)) > 9007199254740992",
          "score_text", "document.score", "bad-score",
          "an integer score past 2**53, which a double holds only rounded (ties would be made up): {v}"),
]  # fmt: skip
_FAULT_CAUSES = [
    Cause("kind = 'index'", "field", "document index", "bad-value",
          "a document whose index is not a list position (0 to 2,147,483,647): {v}"),
    Cause("kind = 'twice'", "field", "document field", "duplicate-key",
          "a document field given twice in one span (which value is meant?): {v}"),
    Cause("kind = 'value'", "field || ' holds ' || value", "document.id", "wrong-type",
          "a document id that is not one string or number: {v}"),
]  # fmt: skip


def check_spans(con: duckdb.DuckDBPyConnection, formats: dict[str, str]) -> list[Finding]:
    out: list[Finding] = []
    files = [str(r[0]) for r in con.execute("SELECT DISTINCT file FROM trc_spans ORDER BY 1").fetchall()]
    for f in files:
        spans = f"(SELECT * FROM trc_spans WHERE file = {sql_str(f)})"
        # only documents with a fault are joined to their span's line (the join of every document cost more)
        faulty = " OR ".join(f"({c.where})" for c in _DOC_CAUSES)
        docs = f"(SELECT d.*, s.line, s.span_id FROM (FROM trc_docs WHERE {faulty}) d JOIN {spans} s USING (sid))"
        faults = f"(SELECT d.*, s.line FROM trc_faults d JOIN {spans} s USING (sid))"
        out += counted_causes(con, spans, Path(f), _SPAN_CAUSES + _time_causes(formats.get(f, "")))
        out += counted_causes(con, docs, Path(f), _DOC_CAUSES)
        out += counted_causes(con, faults, Path(f), _FAULT_CAUSES)
    return out
