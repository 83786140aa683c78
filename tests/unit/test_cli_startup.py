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
