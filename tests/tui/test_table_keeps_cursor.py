"""A table keeps its highlighted row on screen when it gets shorter: a status line that wraps onto a second line,
or a terminal made smaller, must not leave the cursor below the last drawn row, where a key would act on a row the
user cannot see."""

from __future__ import annotations

import pyarrow as pa
import pytest
from textual.app import App, ComposeResult
from textual.containers import Container
from textual.widgets import Static

from ragtriage.tui.widgets.arrow_table import ArrowTable
from tests.tui.helpers import pilot_test

pytestmark = pytest.mark.slow

ROWS = 53


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("status", id="status")
        with Container(id="box"):
            yield ArrowTable(pa.table({"case_id": [f"c{i:02d}" for i in range(ROWS)]}), cursor_row=ROWS - 1)


async def _until_visible(pilot: object, table: ArrowTable) -> None:
    for _ in range(50):
        if table.cursor_visible():
            return
        await pilot.pause()  # type: ignore[attr-defined]
    raise AssertionError(f"row {table.cursor_row} is not among rows {table.scroll_y}+{table.rows_in_view()}")


@pilot_test
async def test_the_last_row_stays_drawn_when_the_table_gets_shorter() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(ArrowTable)
        await _until_visible(pilot, table)
        before = table.rows_in_view()
        app.query_one("#status", Static).styles.height = 3  # the status wraps: the table loses two rows
        await pilot.pause()
        await pilot.pause()
        assert table.rows_in_view() == before - 2
        assert table.cursor_row == ROWS - 1
        assert table.cursor_visible(), f"row {table.cursor_row} not among {table.scroll_y}+{table.rows_in_view()}"
        await pilot.resize_terminal(80, 16)  # and a smaller terminal
        await pilot.pause()
        await pilot.pause()
        assert table.cursor_visible(), f"row {table.cursor_row} not among {table.scroll_y}+{table.rows_in_view()}"
