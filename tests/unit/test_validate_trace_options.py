"""``validate`` reads a trace export with the load's own trace options, and refuses them for anything else."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from ragtriage.cli import app
from ragtriage.contract.errors import Cause, counted_causes, counted_causes_by

runner = CliRunner()
LANGFUSE = ["--trace-query", "input.question", "--trace-docs", "output.hits", "--trace-doc-id", "doc.key",
            "--trace-score", "relevance"]  # fmt: skip


def _observations(path: Path) -> Path:
    """A Langfuse observation whose documents sit where only the options say, one without an id, one NaN score."""
    hits = [{"doc": {"key": "d1"}, "relevance": 0.5}, {"doc": {"key": ""}, "relevance": "NaN"}]
    times = {"startTime": "2025-01-01T00:00:00.000Z", "endTime": "2025-01-01T00:00:00.250Z"}
    obs = {"id": "o1", "traceId": "t3", "type": "SPAN", "name": "retrieve", **times,
           "input": {"question": "what is x"}, "output": {"hits": hits}}  # fmt: skip
    path.write_text(json.dumps(obs) + "\n")
    return path


def test_validate_reads_the_export_as_the_load_with_the_same_options_does(tmp_path: Path) -> None:
    obs = _observations(tmp_path / "obs.jsonl")
    plain = runner.invoke(app, ["validate", str(obs), "--table", "traces"])
    assert plain.exit_code == 2 and "no retriever spans" in plain.output, plain.output
    told = runner.invoke(app, ["validate", str(obs), "--table", "traces", *LANGFUSE])
    assert told.exit_code == 2, told.output
    assert f"{obs}:1: document.id: a document without an id" in told.output, told.output
    assert f"{obs}:1: document.score: a document score that is not a finite number: 'NaN'" in told.output
    load = runner.invoke(app, ["load", "--db", str(tmp_path / "t.duckdb"), "--qrels", str(_qrels(tmp_path)),
                               "--traces", str(obs), "--run-id", "prod", *LANGFUSE])  # fmt: skip
    assert load.exit_code == 2
    for line in (ln for ln in told.output.splitlines() if ln.startswith("error: ") and ":1:" in ln):
        assert line.removeprefix("error: ") in load.output, (line, load.output)


def _qrels(tmp_path: Path) -> Path:
    path = tmp_path / "qrels.txt"
    path.write_text("c1 0 d1 1\n")
    return path


def test_trace_options_on_a_file_that_is_not_traces_are_refused_not_ignored(tmp_path: Path) -> None:
    qrels = _qrels(tmp_path)
    for opt in (["--trace-docs", "output.hits"], ["--trace-doc-meta", "acl=access.groups"], ["--repeated", "all"]):
        res = runner.invoke(app, ["validate", str(qrels), *opt])
        assert res.exit_code == 2, (opt, res.output)
        assert "read a trace export, and this is not one" in res.output, res.output
        assert "Traceback" not in res.output
    assert runner.invoke(app, ["validate", str(qrels)]).exit_code == 0
    res = runner.invoke(app, ["validate", str(tmp_path / "obs.jsonl"), "--repeated", "each"])
    assert res.exit_code == 2 and "--repeated must be one of first, last, all" in res.output, res.output


def test_grouped_causes_equal_one_scan_per_value() -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT i AS line, ['a.json', 'b.json', 'c.json'][i % 3 + 1] AS file, "
        "CASE WHEN i % 7 = 0 THEN 'bad' ELSE 'ok' END AS v, i % 5 AS n FROM range(1, 200) r(i)"
    )
    causes = [Cause("v = 'bad'", "v", "value", "bad-value", "{v} is bad"),
              Cause("n = 0 AND file <> 'c.json'", "n", "n", "zero", "zero {v}", "warning")]  # fmt: skip
    grouped = counted_causes_by(con, "t", "file", causes)
    assert list(grouped) == ["a.json", "b.json", "c.json"]
    for file, found in grouped.items():
        one = counted_causes(con, f"(SELECT * FROM t WHERE file = '{file}')", Path(file), causes)
        assert found == one and found
    assert [f.code for f in grouped["c.json"]] == ["bad-value"]
    assert grouped["a.json"][0].count == len([i for i in range(1, 200) if i % 3 == 0 and i % 7 == 0])
