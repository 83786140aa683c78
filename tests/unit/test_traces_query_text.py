"""A span's query matches a case's by the text with whitespace normalised: the shortcut that skips the regular
expression on a text with nothing to change gives what the expression alone gives, for any text."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtriage.store.traces import normalised

_SPACES = " \t\n\x0b\x0c\r\xa0\u1680\u2003\u202f\u3000\u200b"
_TEXT = st.text(alphabet=st.sampled_from(list(_SPACES) + list("ab=[\x1b")), max_size=12)
_CON = duckdb.connect()


def _both(texts: list[str]) -> list[tuple[str, str, str]]:
    """(text, normalised, the regular expression alone) of each text."""
    rows = _CON.execute(
        f"SELECT x, {normalised('x')}, trim(regexp_replace(x, '\\s+', ' ', 'g')) FROM (SELECT unnest(?) AS x)",
        [texts],
    ).fetchall()
    return [(str(x), str(a), str(b)) for x, a, b in rows]


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=20))
def test_the_shortcut_equals_the_regular_expression(texts: list[str]) -> None:
    got = _both(texts)
    assert [(x, a) for x, a, _ in got] == [(x, b) for x, _, b in got]


def test_examples_by_hand() -> None:
    rows = [
        ("  how\tdo \r\n I ", "how do I"),
        ("\u3000a\xa0", "a"),
        ("a\xa0 b", "a\xa0 b"),
        ("plain text", "plain text"),
    ]
    assert [(x, a) for x, a, _ in _both([t for t, _ in rows])] == rows
