"""The cache folder follows the platform's convention (platformdirs) unless RAGTRIAGE_CACHE_DIR names another."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtriage.metrics import summary_cache
from ragtriage.paths import cache_root


def test_cache_root_follows_xdg_and_the_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGTRIAGE_CACHE_DIR", raising=False)
    monkeypatch.delenv("RAGTRIAGE_TUI_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_root() == tmp_path / "xdg" / "ragtriage"
        assert summary_cache.cache_dir() == tmp_path / "xdg" / "ragtriage" / "summary"
    monkeypatch.setenv("RAGTRIAGE_CACHE_DIR", str(tmp_path / "mine"))
    assert summary_cache.cache_dir() == tmp_path / "mine" / "summary"
    monkeypatch.setenv("RAGTRIAGE_TUI_CACHE", "off")
    assert summary_cache.cache_dir() is None


def test_the_suite_runs_with_home_in_its_temporary_folder() -> None:
    """conftest points HOME and every cache into the session folder before any fixture: a load in a
    module-scoped fixture cannot reach the user's ~/.cache (it did: 3 files per run)."""
    home = Path(os.environ["HOME"])
    assert home.name == "home" and home.parent.name.startswith("ragtriage-tests-")
    child = subprocess.run(
        [sys.executable, "-c", "from ragtriage.paths import cache_root; print(cache_root())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(child.stdout.strip()).is_relative_to(home.parent)
