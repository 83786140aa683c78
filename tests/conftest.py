"""The suite writes nothing outside its temporary folders.

Everything a run could write beside the user's files is pointed into one session folder at configure time,
before the first fixture (module-scoped fixtures build stores, and a load precomputes the TUI's summary cache,
before any function-scoped fixture runs): HOME and XDG_CACHE_HOME, ragtriage's cache folder, hypothesis's
example database. At the end of the session the stand-in HOME must still be empty: anything in it would have
landed in the user's real home, so the run fails and names the files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.trec_fixtures import Files, write_files

SESSION_TMP = Path(tempfile.mkdtemp(prefix="ragtriage-tests-"))
FAKE_HOME = SESSION_TMP / "home"


def pytest_configure(config: pytest.Config) -> None:
    FAKE_HOME.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(FAKE_HOME)
    os.environ["XDG_CACHE_HOME"] = str(FAKE_HOME / ".cache")
    os.environ["RAGTRIAGE_CACHE_DIR"] = str(SESSION_TMP / "cache")
    os.environ["RAGTRIAGE_TUI_CACHE"] = str(SESSION_TMP / "summary-cache")
    # matplotlib (the report extra) keeps its font cache and config here rather than under HOME
    os.environ["MPLCONFIGDIR"] = str(SESSION_TMP / "matplotlib")
    try:
        from hypothesis import settings
        from hypothesis.database import DirectoryBasedExampleDatabase
    except ImportError:  # pragma: no cover - hypothesis is in the test extra
        return
    settings.register_profile("tmp", database=DirectoryBasedExampleDatabase(str(SESSION_TMP / "hypothesis")))
    settings.load_profile("tmp")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    written = sorted(str(p.relative_to(FAKE_HOME)) for p in FAKE_HOME.rglob("*"))
    shutil.rmtree(SESSION_TMP, ignore_errors=True)
    if written:
        print(f"\nthe test run wrote into the user's home: {', '.join(written[:10])}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def summary_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own summary-cache folder, so no test sees another's entries."""
    folder = tmp_path / "summary-cache"
    monkeypatch.setenv("RAGTRIAGE_TUI_CACHE", str(folder))
    return folder


@pytest.fixture(autouse=True)
def output_to_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands print as into a pipe without COLUMNS (whole lines, tables at their width), whatever terminal or
    xdist worker runs the tests; a test of the terminal's width sets COLUMNS itself (tests/unit/test_tables_fit)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(scope="session")
def trec_files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    """The seeded TREC qrels and runs of tests/trec_fixtures.py, written once per test process."""
    return write_files(tmp_path_factory.mktemp("trec"))
