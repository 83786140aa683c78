"""The trace-reading options ``load --traces`` and ``validate`` share: one set of names and help texts and one
conversion into ``TraceOptions``, so validate checks an export as the load with the same options would read it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

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


def trace_options(
    query: str | None,
    docs: str | None,
    doc_id: str | None,
    score: str | None,
    case_id_attribute: str | None,
    principal_attribute: str | None,
    groups_attribute: str | None,
    repeated: str,
    doc_meta: list[str] | None,
) -> TraceOptions:
    """The options as the reader takes them; a malformed one exits 2 naming it."""
    from ragtriage.contract.traces import TraceOptions
    from ragtriage.contract.traces.doc_metadata import parse_doc_meta

    try:
        return TraceOptions(
            query=query,
            docs=docs,
            doc_id=doc_id,
            score=score,
            case_id_attribute=case_id_attribute,
            principal_attribute=principal_attribute,
            groups_attribute=groups_attribute,
            repeated=repeated or "first",
            doc_meta=parse_doc_meta(doc_meta or []),
        )
    except ValueError as exc:
        raise fail(exc) from exc
