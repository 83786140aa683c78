"""Where ragtriage keeps files: the default store file name, the cache folder (no heavy imports: the CLI
reads these at start-up), and how an output streamed to its file appears there only once whole.

The platform's convention comes from platformdirs (``~/.cache/ragtriage`` on Linux, honouring
``XDG_CACHE_HOME``; ``~/Library/Caches/ragtriage`` on macOS; ``%LOCALAPPDATA%\\ragtriage\\Cache`` on Windows);
``RAGTRIAGE_CACHE_DIR`` names another folder (the test suite points it into its temporary folder).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A hidden file beside ``path`` to write, renamed to ``path`` when the block ends and removed when it
    raises: an output streamed to its file (a pool, a gate's verdict) that fails part-way (an error, Ctrl-C)
    leaves no shorter file that reads as a whole one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
