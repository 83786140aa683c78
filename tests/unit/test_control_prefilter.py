"""The control rules test a value with a regular expression only when a cheap test lets it through
(``field_rules.may_hold_controls``): that test must let through every value the expression matches."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ragtriage.contract.field_rules import _TEXT_CONTROLS, ID_CONTROLS, control_rule, may_hold_controls
from ragtriage.contract.rules import apply_rules
from ragtriage.contract.staging import Staged


@pytest.mark.parametrize("pattern", [ID_CONTROLS, _TEXT_CONTROLS])
def test_every_code_point_the_pattern_matches_passes_the_cheap_test(pattern: str) -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE s AS SELECT i, 'id' || chr(CAST(i AS INTEGER)) || 'x' AS v FROM range(0, 1114112) t(i) "
        "WHERE i < 55296 OR i > 57343"  # every code point but the surrogates, inside an id
    )
    matched, missed, passed = con.execute(
        f"""SELECT count(*) FILTER (WHERE regexp_matches(v, ?)),
                   count(*) FILTER (WHERE regexp_matches(v, ?) AND NOT {may_hold_controls("v")}),
                   count(*) FILTER (WHERE {may_hold_controls("v")})
            FROM s""",
        [pattern, pattern],
    ).fetchall()[0]
    assert matched >= 75 and missed == 0
    # it lets through every non-ASCII character, and of ASCII the 33 controls, quotes and backslash only
    non_ascii = 1114112 - 2048 - 128
    assert passed == non_ascii + 33 + 3


def test_control_rule_finds_controls_and_passes_look_alikes() -> None:
    con = duckdb.connect()
    ids = ["d1", "d\x1b[2J", "d\u202e", "caf\u00e9", "d\\x1b", "d'1", 'd"1', "d\x7f", "d\u0085", None]
    con.execute("CREATE TABLE stg (line BIGINT, document_id VARCHAR)")
    con.executemany("INSERT INTO stg VALUES (?, ?)", list(enumerate(ids, start=1)))
    staged = Staged("stg", Path("run.jsonl"), "jsonl", len(ids), [], "line")
    found = apply_rules(con, staged, [control_rule("document_id", strict=True)])
    assert [f.line for f in found] == [2, 3, 8, 9]
    assert {f.code for f in found} == {"control-in-id"}
