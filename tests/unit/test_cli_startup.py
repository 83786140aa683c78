"""`ragtriage --help` must not import the data stack: every command imports duckdb, pyarrow, numpy, the core
and textual inside its body, so start-up costs typer and the command modules only (bench/cli_startup.py times
it). An import added at the top of a command module fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("duckdb", "pyarrow", "numpy", "textual", "jsonschema", "platformdirs")


def test_help_imports_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['ragtriage', '--help']\n"
        "from ragtriage.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"
    assert "metrics" in out and "export-notes" in out  # the help listed the commands


@pytest.mark.slow
def test_a_command_still_reaches_its_core(tmp_path: Path) -> None:
    missing = tmp_path / "none.duckdb"
    res = subprocess.run(
        [sys.executable, "-m", "ragtriage.cli", "metrics", "--db", str(missing), "--run", "r"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and "no such database" in res.stderr and not missing.exists()


@pytest.mark.slow
def test_the_one_off_imports_neither_pandas_nor_numpy_ma(tmp_path: Path) -> None:
    """`metrics --qrels --run` of a list repeating a document: its repeats are found and dropped (nDCG@10 is 1:
    the relevant d1 first, once) without pandas, which pyarrow imports to convert numpy when it is installed, or
    numpy.ma, which np.unique imports."""
    pytest.importorskip("pandas")  # without it installed the check below would pass whatever the code does
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    run.write_text("q1 Q0 d1 1 0.9 a\nq1 Q0 d2 2 0.8 a\nq1 Q0 d1 3 0.7 a\nq2 Q0 d4 1 0.5 a\nq2 Q0 d3 2 0.4 a\n")
    code = (
        "import sys\n"
        f"sys.argv = ['ragtriage', 'metrics', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, '-m', 'nDCG@10',"
        " '--per-case', '--format', 'trec']\n"
        "from ragtriage.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('pandas', 'numpy.ma') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[-1] == "[]"
    assert [line.split() for line in out[:-1]] == [
        # --format trec names a figure as trec_eval does: nDCG@10 (linear gain) is its ndcg_cut_10
        ["ndcg_cut_10", "q1", "1.0000"],
        ["ndcg_cut_10", "q2", "0.6309"],
        ["ndcg_cut_10", "all", "0.8155"],  # (1 + 1/log2(3)) / 2
    ]


def test_a_named_command_is_built_alone_and_reads_as_in_the_whole_app() -> None:
    """`ragtriage CMD ...` builds CMD alone (typer turns no other command's signature into parameters); its help,
    usage errors and exit codes are those of the whole application, and anything that is not one top-level command
    gets the whole application."""
    from typer.testing import CliRunner

    from ragtriage.cli import app, invoked

    runner = CliRunner()
    names = ["metrics", "trec-eval", "load", "export-notes", "import-labels"]
    for name in names:
        for args in ([name, "--help"], [name, "--no-such-option"], ["--wait", name, "--help"]):
            only = invoked(args)
            assert len(only.registered_commands) == 1 < len(app.registered_commands) and not only.registered_groups
            alone, whole = runner.invoke(only, args), runner.invoke(app, args)
            assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
            usage = 1 if name == "trec-eval" else 2  # trec-eval exits as trec_eval on a usage error
            assert alone.exit_code in (0, usage) and "Usage: ragtriage " in alone.output
    for args in ([], ["--help"], ["--version"], ["dataset", "--help"], ["metricz"], ["--wait"], ["--db", "metrics"]):
        assert invoked(args) is app
    assert runner.invoke(invoked(["metricz"]), ["metricz"]).exit_code == 2
