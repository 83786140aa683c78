"""A 5,000-character query is read in full on the case screen: the header shows its start and says where the rest
is; the last section holds all of it, wrapped, controls made visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtriage.safe_text import visible
from ragtriage.tui.app import TriageApp
from ragtriage.tui.screens.case_detail import CaseScreen
from tests.factory import make_store
from tests.tui.conftest import CASES, DOCS, LABELS, RUNS
from tests.tui.helpers import pilot_test, settle, static_text

LONG_QUERY = ('=HYPERLINK("http://x") \x1b[2J [bold]m[/] \u202eevil ' + "lorem ipsum dolor sit amet " * 200)[:5000]


pytestmark = pytest.mark.slow  # pilot tests of seconds each


@pilot_test
async def test_a_5000_character_query_is_readable_in_full(tmp_path: Path) -> None:
    cases = [dict(c) for c in CASES]
    cases[1]["query"] = LONG_QUERY  # q2
    make_store(tmp_path, cases=cases, labels=LABELS, documents=DOCS, runs=RUNS, db="l.duckdb").close()
    app = TriageApp(tmp_path / "l.duckdb", "bm25", "hybrid", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_case("q2", ["q2"])
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CaseScreen)
        why = static_text(app, "#sec-why")
        assert "the query in full (5000 characters) is the last section: G" in why
        assert 'Q =HYPERLINK("http://x") ␛[2J [bold]m[/]' in why
        section = screen.query_one("#sec-query")
        assert section.display
        lines = static_text(app, "#sec-query").splitlines()
        assert lines[0] == "Query in full"
        assert " ".join(line.strip() for line in lines[1:] if line.strip()) == " ".join(visible(LONG_QUERY).split())
        assert max(len(line) for line in lines) <= 80
        app.open_case("q1", ["q1"])  # a short query: no such section
        await settle(pilot)
        assert not app.screen.query_one("#sec-query").display
