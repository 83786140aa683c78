"""The case screen of a case loaded from traces shows its trace id (to open the trace in the tracing tool)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtriage.cli import app as cli
from ragtriage.tui.app import TriageApp
from tests.tui.helpers import pilot_test, settle
from tests.tui.test_untrusted import shown

pytest.importorskip("opentelemetry.proto")
from tests.trace_fixtures import Retrieval, write_otlp  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "sample_runs"


@pytest.mark.slow  # loads the sample
@pilot_test
async def test_a_trace_case_shows_its_trace_id_at_80x24(tmp_path: Path) -> None:
    spans = [Retrieval("what does the \x1b[2J [bold]new[/] badge policy say?", [("pol-travel-2024#06", 0.8, "x")],
                       0x5EED, latency_ms=31.0)]  # fmt: skip
    path = write_otlp(tmp_path / "t.json", spans)
    db = tmp_path / "t.duckdb"
    res = CliRunner().invoke(cli, ["load", "--db", str(db), "--dataset", str(SAMPLE / "dataset"), "--traces",
                                   str(path), "--run-id", "prod"])  # fmt: skip
    assert res.exit_code == 0, res.output
    trace_id = base64.b64encode((0x5EED).to_bytes(16, "big")).decode()  # as OTLP's protobuf JSON mapping writes it
    app = TriageApp(db, "prod", author="tester")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        case = _trace_case(db)
        app.open_case(case, [case])
        await settle(pilot)
        text = shown(app)
        assert f"trace {trace_id}" in text, text
        assert "latency 31 ms" in text and "[bold]new[/]" in text and "␛[2J" in text, text


def _trace_case(db: Path) -> str:
    from ragtriage.store import connect

    con = connect(db, read_only=True)
    try:
        return str(con.execute("SELECT case_id FROM cases WHERE starts_with(case_id, 'trace-')").fetchall()[0][0])
    finally:
        con.close()
