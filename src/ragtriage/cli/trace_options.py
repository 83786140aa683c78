"""The trace-reading options ``load --traces`` and ``validate`` share: one set of names and help texts and one
conversion into ``TraceOptions``, so validate checks an export as the load with the same options would read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragtriage.cli._app import fail

if TYPE_CHECKING:
    from ragtriage.contract.traces import TraceOptions

TraceQueryOpt = Annotated[
    str | None, typer.Option(help="Where a span's query is: an attribute key (OTLP) or a path (input.query).")
]
TraceDocsOpt = Annotated[
    str | None, typer.Option(help="Where a span's ranked documents are (a JSON list): attribute or path.")
]
TraceDocIdOpt = Annotated[str | None, typer.Option(help="Path of the id inside each --trace-docs document.")]
TraceScoreOpt = Annotated[str | None, typer.Option(help="Path of the score inside each document.")]
CaseIdAttributeOpt = Annotated[
    str | None, typer.Option(help="Span attribute (or path) holding the case id; else queries match by text.")
]
PrincipalAttributeOpt = Annotated[
    str | None, typer.Option(help="Span attribute holding the user (principal) of a new trace case.")
]
GroupsAttributeOpt = Annotated[str | None, typer.Option(help="Span attribute holding the principal's groups (a list).")]
RepeatedOpt = Annotated[
    str, typer.Option(help="Several spans of one case: first|last is its list; all keeps each latency too.")
]
TraceDocMetaOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="FIELD=KEY: the document.metadata key that holds a corpus-manifest field (acl, tenant, status, "
        "effective_from, effective_to, updated_at, title, ...; KEY a dotted path such as access.groups), when no "
        "manifest comes with the dataset; repeatable. See docs/traces.md for the default keys."
    ),
]


def trace_options(params: Mapping[str, Any]) -> TraceOptions:
    """The options above as the reader takes them, from a command's ``ctx.params`` (its parameters are named
    ``trace_query``, ``trace_docs``, ... as in ``load``); a malformed one exits 2 naming it."""
    from ragtriage.contract.traces import TraceOptions
    from ragtriage.contract.traces.doc_metadata import parse_doc_meta

    try:
        return TraceOptions(
            query=params["trace_query"],
            docs=params["trace_docs"],
            doc_id=params["trace_doc_id"],
            score=params["trace_score"],
            case_id_attribute=params["case_id_attribute"],
            principal_attribute=params["principal_attribute"],
            groups_attribute=params["groups_attribute"],
            repeated=params["repeated"] or "first",
            doc_meta=parse_doc_meta(params["trace_doc_meta"] or []),
        )
    except ValueError as exc:
        raise fail(exc) from exc
