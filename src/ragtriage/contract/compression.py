"""Compressed inputs (.gz, .bz2) read like plain ones, recognised by their magic bytes whatever the file name.

DuckDB's readers decompress gzip themselves (``compression='gzip'``), so a gzipped run is still scanned
in vectorised C++. DuckDB has no bzip2 reader: a bzip2 file is decompressed once, in blocks, into a scratch file
that lives as long as the load (``scratch()``), and DuckDB reads that copy.
"""

from __future__ import annotations

import atexit
import bz2
import gzip
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

_GZIP, _BZ2 = b"\x1f\x8b", b"BZh"
_scratch: list[Path] = []


def compression_of(path: Path) -> str | None:
    """``gzip``, ``bz2`` or None, from the first bytes (a file named ``run.gz`` that is plain text is plain)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(3)
    except OSError:
        return None
    if head.startswith(_GZIP):
        return "gzip"
    if head.startswith(_BZ2):
        return "bz2"
    return None


def open_binary(path: Path) -> IO[bytes]:
    """The file's decompressed bytes (for sniffing its first lines and hashing nothing else)."""
    comp = compression_of(path)
    if comp == "gzip":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if comp == "bz2":
        return bz2.open(path, "rb")
    return path.open("rb")


def head_bytes(path: Path, n: int = 65536) -> bytes:
    """Up to ``n`` decompressed bytes from the start of the file (b"" when it cannot be read)."""
    try:
        with open_binary(path) as fh:
            return fh.read(n)
    except (OSError, EOFError):
        return b""


def plain_name(path: Path) -> str:
    """The file name without a compression suffix: ``qrels.test.tsv.gz`` -> ``qrels.test.tsv``."""
    name = path.name
    for suffix in (".gz", ".bz2", ".gzip", ".bzip2"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def duckdb_source(path: Path) -> tuple[Path, str]:
    """A path DuckDB can read and the ``compression`` option to read it with.

    bzip2 is decompressed into a scratch file: inside ``scratch()`` the copy is removed when the load ends,
    outside it when the process exits.
    """
    comp = compression_of(path)
    if comp == "gzip":
        return path, "gzip"
    if comp != "bz2":
        return path, "none"
    if not _scratch:  # a caller outside a load (validate, record): a folder removed when the process exits
        folder = Path(tempfile.mkdtemp(prefix="ragtriage-"))
        atexit.register(shutil.rmtree, folder, True)
        _scratch.append(folder)
    out = _scratch[-1] / f"{len(list(_scratch[-1].iterdir()))}-{plain_name(path)}"
    with bz2.open(path, "rb") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    return out, "none"


@contextmanager
def scratch() -> Iterator[Path]:
    """A scratch folder for decompressed copies, removed when the load ends (re-entrant: nested uses share it)."""
    if _scratch:  # nested, or after a use outside any scratch(): share the open folder
        yield _scratch[-1]
        return
    folder = Path(tempfile.mkdtemp(prefix="ragtriage-"))
    _scratch.append(folder)
    try:
        yield folder
    finally:
        _scratch.pop()
        shutil.rmtree(folder, ignore_errors=True)
