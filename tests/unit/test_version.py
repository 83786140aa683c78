"""One version: pyproject.toml's, which `ragtriage --version`, ``ragtriage.__version__`` and the newest release
of CHANGELOG.md all state."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import ragtriage

ROOT = Path(__file__).resolve().parents[2]


def pyproject_version() -> str:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def newest_release() -> str:
    """The first ``## [x.y.z]`` heading of CHANGELOG.md (``[Unreleased]`` above it is not a release)."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    m = re.search(r"^## \[(\d+\.\d+\.\d+[^\]]*)\] - \d{4}-\d\d-\d\d$", text, flags=re.M)
    assert m is not None, "CHANGELOG.md has no release heading `## [x.y.z] - YYYY-MM-DD`"
    return m[1]


def test_version_is_the_same_in_pyproject_the_package_the_cli_and_the_changelog() -> None:
    version = pyproject_version()
    assert ragtriage.__version__ == version, "the installed metadata is stale: reinstall (pip install -e .)"
    res = subprocess.run([sys.executable, "-m", "ragtriage.cli", "--version"], capture_output=True, text=True)
    assert (res.returncode, res.stdout) == (0, f"ragtriage {version}\n")
    assert newest_release() == version


def test_changelog_keeps_the_keep_a_changelog_layout() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    headings = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert headings[0] in ("Unreleased", newest_release())
    sections = set(re.findall(r"^### (\w+)$", text, flags=re.M))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
