"""Where ragtriage keeps files: the default store file name and the cache folder (no heavy imports: the CLI
reads these at start-up).

The platform's convention comes from platformdirs (``~/.cache/ragtriage`` on Linux, honouring
``XDG_CACHE_HOME``; ``~/Library/Caches/ragtriage`` on macOS; ``%LOCALAPPDATA%\\ragtriage\\Cache`` on Windows);
``RAGTRIAGE_CACHE_DIR`` names another folder (the test suite points it into its temporary folder).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "RAGTRIAGE_CACHE_DIR"

#: The store file a command uses when ``--db`` is not given.
DEFAULT_DB = "ragtriage.duckdb"


def cache_root() -> Path:
    """The folder every ragtriage cache lives under (not created here)."""
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ragtriage", appauthor=False))
