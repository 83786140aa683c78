"""Request templates, response paths and hit reading for `ragtriage record` (no retriever involved)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ragtriage.http_secrets import strip_template, strip_url
from ragtriage.record import RecordError, Request, RetrieverError
from ragtriage.record.build import filters_applied, pairs, response_shape
from ragtriage.record.hits import MISSING, parse_path
from ragtriage.record.http_adapter import parse_template

HOSTILE = 'x", "admin": true, "q": "{k}\\u0000'


def req(query: str = "hotel cap", **kw: object) -> Request:
    base: dict[str, object] = {
        "case_id": "q1",
        "query": query,
        "k": 10,
        "candidate_k": None,
        "principal": {"id": "u1", "groups": ["all-staff"]},
        "filters": None,
    }
    return Request(**{**base, **kw})  # type: ignore[arg-type]


def test_template_substitutes_values_not_text() -> None:
    t = parse_template('{"q": "{query}", "k": {k}, "user": {principal}, "f": {filters}, "tag": "case-{case_id}"}')
    body = t.render(req(HOSTILE))
    assert body == {
        "q": HOSTILE,
        "k": 10,
        "user": {"id": "u1", "groups": ["all-staff"]},
        "f": None,
        "tag": "case-q1",
    }
    # The hostile query stays one string: no "admin" key was injected.
    assert json.loads(json.dumps(body))["q"] == HOSTILE


def test_placeholder_inside_a_longer_string_gets_the_json_text_of_a_non_string() -> None:
    t = parse_template('{"text": "k={k} p={principal}", "nested": [{"x": "{k}"}], "by-{case_id}": {"{k}": 1}}')
    assert t.render(req()) == {
        "text": 'k=10 p={"id": "u1", "groups": ["all-staff"]}',
        "nested": [{"x": 10}],
        "by-q1": {"10": 1},
    }


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ('{"q": "{query}", "k": {k}', "not valid JSON"),
        ('{"q": {query} {k}}', "not valid JSON"),
        ('{"q": "{query}", "x": "{tenant}"}', "unknown placeholder(s) {tenant}"),
    ],
)
def test_bad_templates_are_refused(template: str, message: str) -> None:
    with pytest.raises(RecordError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_template(template)


def test_paths() -> None:
    doc = {"data": {"hits": [{"id": "a"}, {"id": "b"}]}, "meta": {"index": "idx-1"}}
    assert parse_path("data.hits[1].id").get(doc) == "b"
    assert parse_path("$.meta.index").get(doc) == "idx-1"
    assert parse_path("data.hits[-1].id").get(doc) == "b"
    assert parse_path("data.hits[5].id").get(doc) is MISSING
    assert parse_path("$").get(doc) is doc
    for bad in ("data..hits", "hits[x]", "a[0]b"):
        with pytest.raises(RecordError, match="malformed"):
            parse_path(bad)


def test_named_paths_read_hits_stage_flags_and_versions() -> None:
    shape = response_shape(
        "chunk",
        {"hits": "out.items", "id": "cid", "document_id": "doc.id", "score": "s", "stage": "st", "fallback": "fb"},
        ["index_version=meta.idx"],
    )
    raw = {
        "out": {
            "items": [
                {"cid": "c1", "doc": {"id": "d1"}, "s": 2.5, "st": "final"},
                {"cid": "c9", "doc": {"id": "d9"}, "s": 0.5, "st": "candidate"},
                {"cid": "c2", "doc": {"id": "d2"}, "s": "1.5"},
            ]
        },
        "fb": True,
        "meta": {"idx": "idx-7"},
    }
    r = shape.check_first(raw)
    assert [(h.document_id, h.chunk_id, h.score) for h in r.final] == [("d1", "c1", 2.5), ("d2", "c2", 1.5)]
    assert [h.chunk_id for h in r.candidates or []] == ["c9"]
    assert r.fallback is True
    assert r.versions == {"index_version": "idx-7"}


def test_a_path_matching_nothing_shows_the_response_made_visible() -> None:
    shape = response_shape("chunk", {"hits": "data.hits"})
    with pytest.raises(RecordError) as err:
        shape.check_first({"results": [], "note": "\x1b[2Jboom \u202eevil"})
    text = str(err.value)
    assert "'data.hits' matches nothing in the first response" in text
    assert "\x1b" not in text and "\u202e" not in text
    assert "[2Jboom \\u202eevil" in text


def test_default_keys_tuples_and_objects() -> None:
    doc_shape = response_shape("document", {})
    r = doc_shape.read([("d1", 3.0), ("d2", 1.0)])
    assert [(h.document_id, h.chunk_id, h.score) for h in r.final] == [("d1", None, 3.0), ("d2", None, 1.0)]
    chunk_shape = response_shape("chunk", {})
    r = chunk_shape.read({"hits": [("d1", "d1#2", 0.9), SimpleNamespace(document_id="d3", chunk_id="d3#1", score=0.1)]})
    assert [(h.document_id, h.chunk_id, h.score) for h in r.final] == [("d1", "d1#2", 0.9), ("d3", "d3#1", 0.1)]
    assert r.candidates is None


def test_langchain_documents_and_llamaindex_nodes_by_their_shape() -> None:
    docs = [
        SimpleNamespace(
            id=None, page_content="Hotel ceiling is EUR 150", metadata={"document_id": "d1", "chunk_id": "d1#6"}
        ),
        SimpleNamespace(id="d2#1", page_content="other", metadata={"source": "d2", "score": 0.4}),
    ]
    r = response_shape("chunk", {}).read(docs)
    assert [(h.document_id, h.chunk_id, h.score, h.snippet) for h in r.final] == [
        ("d1", "d1#6", None, "Hotel ceiling is EUR 150"),
        ("d2", "d2#1", 0.4, "other"),
    ]
    node = SimpleNamespace(node_id="n1", ref_doc_id="docA", text="t", metadata={})
    r = response_shape("chunk", {}).read([SimpleNamespace(node=node, score=0.75)])
    assert (r.final[0].document_id, r.final[0].chunk_id, r.final[0].score) == ("docA", "n1", 0.75)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"hits": [{"document_id": "d1"}]}, "no chunk id"),
        ({"hits": [{"chunk_id": "c1", "document_id": "d", "score": "high"}]}, "not a number"),
        ({"hits": [{"chunk_id": "c1"}]}, "no document id"),
        ({"hits": [{"chunk_id": "c1", "document_id": "d", "stage": "rerank"}]}, "stage 'rerank'"),
        ({"hits": [{"chunk_id": "c1", "document_id": "d", "score": float("nan")}]}, "not a finite number"),
        ({"nothing": 1}, "no hit list"),
    ],
)
def test_unreadable_hits_are_retriever_errors(raw: object, message: str) -> None:
    with pytest.raises(RetrieverError, match=message):
        response_shape("chunk", {}).read(raw)


def test_option_parsers_and_secret_stripping() -> None:
    assert pairs(["index_version=idx 7", "team = search"], "--set", "=") == {"index_version": "idx 7", "team": "search"}
    with pytest.raises(RecordError, match="--header 'Authorization'"):
        pairs(["Authorization"], "--header", ":")
    assert filters_applied("acl, tenant,effective_on=false") == {"acl": True, "tenant": True, "effective_on": False}
    assert strip_url("https://bob:hunter2@search.local:8443/q?api_key=s3cret&lang=en#x") == (
        "https://bob:<redacted>@search.local:8443/q?api_key=<redacted>&lang=en"
    )
    assert strip_template('{"q": "{query}", "api_key": "sk-\\"1", "Auth_Token": "t", "k": {k}}') == (
        '{"q": "{query}", "api_key": "<redacted>", "Auth_Token": "<redacted>", "k": {k}}'
    )


def test_status_named_must_be_the_contracts_found_by_default_is_ignored_otherwise() -> None:
    raw = {"hits": [], "status": "success"}
    assert response_shape("chunk", {}).read(raw).status is None
    assert response_shape("chunk", {}).read({"hits": [], "status": "insufficient_evidence"}).status == (
        "insufficient_evidence"
    )
    with pytest.raises(RetrieverError, match="status 'success' is not one of ok|insufficient_evidence|error"):
        response_shape("chunk", {"status": "status"}).read(raw)
