"""Every command's table fits the terminal: at COLUMNS=80 no line of ``metrics``, ``compare``, ``failures`` or
``info`` on the sample store is longer than 80 characters, and every number of the command's JSON output is
printed whole in its table (a number is never cut to fit)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factory import load_sample

COMMANDS = {
    "metrics": ["metrics", "--run", "dense"],
    "compare": ["compare", "--run", "dense", "--baseline", "bm25"],
    "failures": ["failures", "--run", "dense"],
    "info": ["info"],
}


def _run(db: Path, args: list[str]) -> str:
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}
    done = subprocess.run(
        [sys.executable, "-m", "ragtriage.cli", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _numbers(rows: list[dict[str, Any]]) -> list[Any]:
    return [v for r in rows for v in r.values() if isinstance(v, int | float) and not isinstance(v, bool)]


def _whole(v: Any, tokens: set[str]) -> bool:
    if isinstance(v, int):
        return str(v) in tokens
    return bool({f"{v:.4f}", f"{v:+.4f}", f"{v:.4g}"} & tokens)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return load_sample(tmp_path_factory.mktemp("fit") / "s.duckdb")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_table_fits_80_columns_and_keeps_its_numbers(sample: Path, name: str) -> None:
    args = COMMANDS[name]
    table = _run(sample, args)
    lines = table.splitlines()
    assert len(lines) > 5
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80][:3]
    if name == "info":
        rows = json.loads(_run(sample, [*args, "--json"]))["runs"]
    else:
        rows = json.loads(_run(sample, [*args, "--format", "json"]))["rows"]
    numbers = _numbers(rows)
    assert numbers
    tokens = set(re.split(r"[\s\[\],/│┃|]+", table))
    cut = [v for v in numbers if not _whole(v, tokens)]
    assert not cut, cut[:5]
