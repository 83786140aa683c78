"""``--trace-doc-meta FIELD=KEY``: a key is a dotted path into ``document.metadata``, a quoted part one key."""

from __future__ import annotations

import duckdb
import pytest

from ragtriage.contract.traces.doc_metadata import metadata_path, metadata_pointer, parse_doc_meta

META = '{"acl": ["a"], "access": {"groups": ["hr"], "tenant": {"id": "acme"}}, "security.acl": ["dot"], ' \
       '"owners": ["ann", "bo"], "a/b~c": "odd", "say \\"hi\\"": "quoted", "x": {"y.z": {"w": 1}}}'  # fmt: skip


@pytest.mark.parametrize(
    ("key", "parts", "value"),
    [
        ("acl", ("acl",), '["a"]'),
        ("access.groups", ("access", "groups"), '["hr"]'),
        ("access.tenant.id", ("access", "tenant", "id"), '"acme"'),
        ('"security.acl"', ("security.acl",), '["dot"]'),
        ("owners.1", ("owners", "1"), '"bo"'),
        ("a/b~c", ("a/b~c",), '"odd"'),
        ('"say \\"hi\\""', ('say "hi"',), '"quoted"'),
        ('x."y.z".w', ("x", "y.z", "w"), "1"),
        ("access.missing", ("access", "missing"), None),
        ("security.acl", ("security", "acl"), None),  # unquoted: a path, not the dotted key
    ],
)
def test_a_key_is_read_as_the_path_it_names(key: str, parts: tuple[str, ...], value: str | None) -> None:
    assert metadata_path(key) == parts
    got = duckdb.sql(f"SELECT json_extract(?::JSON, '{metadata_pointer(key)}')", params=[META]).fetchall()[0][0]
    assert got == value


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("acl=a..b", "empty part"),
        ("acl=.a", "empty part"),
        ("acl=a.", "empty part"),
        ('acl="a.b', "unclosed quote"),
        ('acl="a"b', "put a dot after it"),
    ],
)
def test_a_malformed_key_is_refused_naming_the_option(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as exc:
        parse_doc_meta([spec])
    assert spec in str(exc.value)
