"""A corpus manifest derived from trace metadata, for a team that has no other: partial by nature.

Its rows are the documents a retriever returned whose span carried a ``document.metadata`` object, with the
fields read from the metadata keys of ``contract.traces.doc_metadata``. It proves that the documents it lists
exist (with their acl, tenant, status, validity dates), never that any other document is absent: a relevant
document no retriever returned is simply not in it. So every rule that reads absence from the manifest asks
``corpus_manifest.COMPLETE_SQL`` (a manifest loaded with the dataset) rather than "any documents row": the
classifier's ``absent-from-corpus`` and ``in_corpus = false``, the loader's "result unit not in the manifest"
warning, the label import's unit check, the TUI's "not in corpus". Rules that read a listed document's fields
(leakage, staleness, label freshness) read the derived rows as they read a loaded manifest's.

A real manifest wins: when the dataset a load writes brings a documents file, nothing is derived. Otherwise the
first derivation reads the result rows of every trace run in the store, and each later trace load adds its own
run's units in place of the same units' rows (a document's metadata is its newest run's, from that run's last
line); ``meta.corpus_manifest = 'traces'`` marks it, and a dataset loaded without documents keeps it
(``corpus_manifest.keeps_derived``).

Fail closed: a metadata value a verdict reads (``doc_metadata.VERDICT_FIELDS``) that cannot be read as its type,
or a ``document.metadata`` that is not a JSON object, refuses the load with the trace file, line and field,
because dropping it could turn a leak or a stale result into a pass. With a real manifest the metadata is not
read and nothing in it is refused.
"""

from __future__ import annotations

import dataclasses

import duckdb

from ragtriage.contract.errors import Cause, Finding, ValidationFailed, counted_causes_by
from ragtriage.contract.fields import DOC_STATUSES
from ragtriage.contract.staging import sql_str
from ragtriage.contract.traces import TraceOptions
from ragtriage.contract.traces.doc_metadata import (
    VERDICT_FIELDS,
    metadata_json,
    metadata_keys,
    metadata_object,
    metadata_pointer,
)
from ragtriage.store.corpus_manifest import PARTIAL_NOTE, forget_derived, manifest_kind, mark_derived
from ragtriage.store.dataset_rules import document_unit

_TEXT = "CASE WHEN json_type({v}) = 'VARCHAR' THEN json_extract_string({v}, '$') ELSE CAST({v} AS VARCHAR) END"
_KINDS = {
    "acl": "a group name or a list of group names",
    "tenant": "a string",
    "effective_from": "a date (ISO 8601)",
    "effective_to": "a date (ISO 8601)",
    "updated_at": "a timestamp (ISO 8601)",
}
"""What each verdict field's value must be, as the refusal says it."""
_SCALAR = "json_type({v}) NOT IN ('OBJECT', 'ARRAY')"
_DATE = "coalesce(try_cast({t} AS DATE), CAST(try_cast({t} AS TIMESTAMP) AS DATE))"


def _fields(keys: dict[str, tuple[str, ...]], units: str) -> str:
    """SQL over the rows of ``units`` and their ``m`` (a metadata object): each field's raw JSON value
    ``v_<field>``, the first of its keys present and not null. Every key is read by one ``json_extract`` of a list
    of paths, so the object is parsed once."""
    flat = list(dict.fromkeys(k for ks in keys.values() for k in ks))
    at = {k: i + 1 for i, k in enumerate(flat)}
    paths = "[" + ", ".join(sql_str(metadata_pointer(k)) for k in flat) + "]"

    def first(ks: tuple[str, ...]) -> str:
        parts = [f"nullif(vals[{at[k]}], CAST('null' AS JSON))" for k in ks]
        return parts[0] if len(parts) == 1 else f"coalesce({', '.join(parts)})"

    columns = ", ".join(f"{first(ks)} AS v_{name}" for name, ks in keys.items())
    return f"SELECT * EXCLUDE (vals), {columns} FROM (SELECT *, json_extract(m, {paths}) AS vals FROM {units})"


_BARE = """ends_with(CAST(r.metadata AS VARCHAR), ',"document":null}')"""
"""A result row whose metadata is its span's ids alone (``traces.stage_trace_run`` writes them so at rank 1 of
each list, ``document`` last): told by its text's end, since no other row ends so (a ``document`` holding an object
or a string ends in a brace or a quote), without parsing the JSON of every list's first row."""


def _units(unit: str, run_id: str | None) -> str:
    """SQL: one row per unit that the trace runs returned with a metadata object: the metadata (``m``) of the newest
    run's last row naming it, where that row is (``run_id``, ``line``), and whether its rows carried different
    metadata objects (``differs``). Only the chosen row's values become the manifest, so only they are read (and
    refused when unreadable)."""
    run = "" if run_id is None else f" AND u.run_id = {sql_str(run_id)}"
    picked = "{'run_id': run_id, 'line': line, 'document_id': document_id, 'chunk_id': chunk_id, 'm': m}"
    # (run, line, rank) as one integer: the newest run, its last line, the deepest rank; a tie (spans of one
    # request line returning a document at one rank with different metadata) goes to any of them, and is counted
    newest = "(CAST(run_key AS HUGEINT) << 80) | (CAST(line AS HUGEINT) << 32) | rank"
    m = metadata_object("p.m")
    return f"""SELECT unit_id, p.run_id, p.line, p.document_id, p.chunk_id, {m} AS m, differs FROM (
        SELECT {document_unit(unit)} AS unit_id, arg_max({picked}, {newest}) AS p,
               min(hash(m)) <> max(hash(m)) AS differs
        FROM (SELECT u.run_id, r.run_key, r.line, r.rank, r.document_id, r.chunk_id,
                     CAST(NULL AS VARCHAR) AS section_id,
                     json_extract(CAST(r.metadata AS JSON), '$.document') AS m
              FROM result_rows r JOIN runs u USING (run_key)
              WHERE u.source_format = 'traces' AND r.metadata IS NOT NULL{run} AND NOT {_BARE})
        WHERE m IS NOT NULL AND m <> CAST('null' AS JSON)
        GROUP BY ALL)"""


def _typed(name: str) -> str:
    """SQL: the manifest column ``name`` from its raw JSON value ``v_<name>`` (NULL where it cannot be read; the
    causes below refuse that for the verdict fields)."""
    v = f"v_{name}"
    text = _TEXT.format(v=v)
    if name == "acl":
        return f"""CASE json_type({v}) WHEN 'VARCHAR' THEN [json_extract_string({v}, '$')]
                    WHEN 'ARRAY' THEN CASE WHEN list_bool_and(list_transform(json_type({v}, '$[*]'),
                                                                             lambda t: t = 'VARCHAR'))
                                               OR json_array_length({v}) = 0
                                           THEN CAST(json_extract_string({v}, '$[*]') AS VARCHAR[]) END END"""
    if name in ("effective_from", "effective_to"):
        return f"CASE WHEN json_type({v}) = 'VARCHAR' THEN {_DATE.format(t=text)} END"
    if name == "updated_at":
        return f"CASE WHEN json_type({v}) = 'VARCHAR' THEN try_cast({text} AS TIMESTAMP) END"
    if name in ("tenant", "status"):
        return f"CASE WHEN {_SCALAR.format(v=v)} THEN {text} END"
    return text


def _causes(keys: dict[str, tuple[str, ...]]) -> list[Cause]:
    """The refusals of ``trc_manifest_rows``; a field read from one key is named by that key (the user's
    ``--trace-doc-meta`` path), one read from a list of keys by the field."""
    statuses = ", ".join(sql_str(s) for s in DOC_STATUSES)
    field = "document.metadata"

    def named(name: str) -> str:
        return f"{field}.{keys[name][0] if len(keys[name]) == 1 else name}"

    out = [
        Cause(
            "json_type(m) <> 'OBJECT'",
            "left(CAST(m AS VARCHAR), 80)",
            field,
            "malformed-metadata",
            "not a JSON object ({v}): its acl, tenant and dates cannot be read; fix the export, or load a corpus "
            "manifest with the dataset",
        )
    ]
    for name in VERDICT_FIELDS:
        if name == "status":  # an enum: its own cause below
            continue
        kind = _KINDS[name]
        out.append(
            Cause(
                f"json_type(m) = 'OBJECT' AND v_{name} IS NOT NULL AND t_{name} IS NULL",
                f"left(CAST(v_{name} AS VARCHAR), 80)",
                named(name),
                "bad-value",
                f"{{v}} is not {kind}",
            )
        )
    out.append(
        Cause(
            f"json_type(m) = 'OBJECT' AND v_status IS NOT NULL AND t_status NOT IN ({statuses})",
            "left(CAST(v_status AS VARCHAR), 80)",
            named("status"),
            "bad-value",
            f"{{v}} is not one of {'|'.join(DOC_STATUSES)}",
        )
    )
    return out


def _run_label(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    (label,) = con.execute(
        "SELECT string_agg(DISTINCT path, ', ' ORDER BY path) FROM loads WHERE kind = 'run' AND target = ?",
        [run_id],
    ).fetchall()[0]
    return str(label or run_id)


def _read_fields(con: duckdb.DuckDBPyConnection, keys: dict[str, tuple[str, ...]]) -> None:
    """``trc_manifest_rows``: the rows of ``trc_manifest_units`` (each with its metadata ``m``) with every field's
    raw JSON value ``v_<field>`` and its typed value ``t_<field>``, in steps, each a table: DuckDB would otherwise
    re-read the JSON per reference."""
    typed = ", ".join(f"{_typed(name)} AS t_{name}" for name in keys)
    con.execute(f"CREATE OR REPLACE TEMP TABLE trc_manifest_raw AS {_fields(keys, 'trc_manifest_units')}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE trc_manifest_rows AS SELECT *, {typed} FROM trc_manifest_raw")


def _drop_steps(con: duckdb.DuckDBPyConnection) -> None:
    for table in ("trc_manifest_units", "trc_manifest_raw", "trc_manifest_rows"):
        con.execute(f"DROP TABLE IF EXISTS {table}")


def metadata_findings(con: duckdb.DuckDBPyConnection, opts: TraceOptions) -> list[Finding]:
    """What deriving the manifest would refuse in the staged spans' document metadata (``trc_docs``), per trace
    file with its span's line: ``validate`` on a trace export, by the load's own rules. Every document's metadata
    is read, not only the row the load keeps per unit, since which row that is depends on the dataset and the
    store the export is loaded into; with a corpus manifest loaded beside it, the load reads none of it."""
    keys = metadata_keys(opts.doc_meta)
    m = metadata_object(metadata_json("d.metadata"))
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE trc_manifest_units AS
                SELECT * FROM (SELECT s.file, s.line, {m} AS m
                               FROM trc_docs d JOIN trc_spans s USING (sid) WHERE d.metadata IS NOT NULL)
                WHERE m IS NOT NULL AND m <> CAST('null' AS JSON)"""
        )
        _read_fields(con, keys)
        return [
            f for found in counted_causes_by(con, "trc_manifest_rows", "file", _causes(keys)).values() for f in found
        ]
    finally:
        _drop_steps(con)


def derive_manifest(
    con: duckdb.DuckDBPyConnection, unit: str, opts: TraceOptions | None = None, run_id: str | None = None
) -> str | None:
    """Derive the manifest unless a loaded one is there; return the sentence the load prints, or None when
    nothing was derived. Without a manifest, from every trace run in the store; with a derived one, from the trace
    run ``run_id`` just loaded (its units replace theirs), so a load costs what its own rows cost. Runs inside the
    load's transaction: a refused value raises ``ValidationFailed`` and the caller rolls everything back."""
    kind = manifest_kind(con)
    if kind == "complete" or (kind == "partial" and run_id is None):
        return None
    if kind == "none":
        forget_derived(con)
        run_id = None  # first derivation: every trace run in the store
    keys = metadata_keys(opts.doc_meta if opts else ())
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE trc_manifest_units AS {_units(unit, run_id)}")
        _read_fields(con, keys)
        errors = [
            dataclasses.replace(f, file=_run_label(con, run))
            for run, found in counted_causes_by(con, "trc_manifest_rows", "run_id", _causes(keys)).items()
            for f in found
        ]
        if errors:
            raise ValidationFailed(errors)
        n_docs, n_differing = _insert(con, unit, list(keys))
    finally:
        _drop_steps(con)
    if not n_docs:
        return None
    mark_derived(con)
    ((total,),) = con.execute("SELECT count(*) FROM documents").fetchall()
    differing = (
        f"; {n_differing:,} of them carried differing metadata in different spans (the newest run's last wins)"
        if n_differing
        else ""
    )
    return f"{PARTIAL_NOTE}: {n_docs:,} unit(s) from this load's document.metadata ({int(total):,} in all){differing}"


def _insert(con: duckdb.DuckDBPyConnection, unit: str, fields: list[str]) -> tuple[int, int]:
    """The manifest rows, one per unit, in place of the rows of the same units. Returns (rows, units whose
    metadata differed between rows)."""
    doc_id = "coalesce(t_document_id, document_id)" if unit == "chunk" else "document_id"
    chunk = "chunk_id" if unit == "chunk" else "CAST(NULL AS VARCHAR)"
    columns = ", ".join(f"t_{f} AS {f}" for f in fields if f != "document_id")
    ((n_differing,),) = con.execute("SELECT count(*) FROM trc_manifest_rows WHERE differs").fetchall()
    con.execute("DELETE FROM documents WHERE unit_id IN (SELECT unit_id FROM trc_manifest_rows)")
    ((n,),) = con.execute(
        f"""INSERT INTO documents BY NAME
            SELECT {doc_id} AS document_id, {chunk} AS chunk_id, CAST(NULL AS VARCHAR) AS section_id, unit_id,
                   (SELECT coalesce(max(position), 0) FROM documents) + row_number() OVER (ORDER BY unit_id)
                       AS position, {columns}
            FROM trc_manifest_rows"""
    ).fetchall()
    return int(n), int(n_differing)


def first_span_time(con: duckdb.DuckDBPyConnection) -> str | None:
    """The chosen spans' earliest start (UTC, ISO 8601): the trace run's ``created_at``, the date the staleness
    check judges its results at (as a recorded run's creation date)."""
    ((started,),) = con.execute(
        "SELECT strftime(make_timestamp(CAST(min(started) * 1000 AS BIGINT)), '%Y-%m-%dT%H:%M:%SZ') FROM trc_chosen"
    ).fetchall()
    return None if started is None else str(started)
