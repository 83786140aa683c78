"""Every test keeps the TUI's summary cache in its own folder, never in the user's ~/.cache."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def summary_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "summary-cache"
    monkeypatch.setenv("RAGTRIAGE_TUI_CACHE", str(folder))
    return folder
