"""docs/cli.md is the CLI's own --help of every command: a changed option without a regenerated page fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_docs_cli_md_is_current() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr + "\n(regenerate with: python scripts/cli_reference.py)"
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in ("## ragtriage metrics", "## ragtriage dataset check", "## ragtriage export-notes"):
        assert command in page
    assert page.count("--format <table|json|csv|markdown|trec>") >= 4  # metrics, failures, check, compare
