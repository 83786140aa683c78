"""The sha256 of an input file, computed beside the load's own reading of it.

Every load records each input file's sha256 (the ``loads`` table). For a large TREC run that is much
hashing on one core; DuckDB's CSV reader, reading the same file into a table at the same time, leaves
part of the second core idle. ``prefetch`` therefore starts the hash on a thread of its own (hashlib releases
the GIL) and the record's ``sha256_of`` waits for it. A digest is keyed by the file's size and modification
time, so a file changed in between is hashed again. An evaluation without a store records no digest: inside
``unrecorded`` nothing is hashed ahead, so no core is taken from the reading and the process does not wait at exit
for a hash nobody reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_pool = ThreadPoolExecutor(1, thread_name_prefix="ragtriage-sha256")
_known: dict[tuple[str, int, int], Future[str]] = {}
_KEEP = 64  # files remembered; a load names a handful
_RECORDED: ContextVar[bool] = ContextVar("ragtriage_digest_recorded", default=True)


@contextmanager
def unrecorded() -> Iterator[None]:
    """No :func:`prefetch` inside the block: the files read there are not recorded (``sha256_of`` still hashes
    a file when asked)."""
    token = _RECORDED.set(False)
    try:
        yield
    finally:
        _RECORDED.reset(token)


def _key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def prefetch(path: Path) -> None:
    """Start hashing the file on the hashing thread (nothing when its digest is known or on its way, or inside
    :func:`unrecorded`)."""
    if not _RECORDED.get():
        return
    key = _key(path)
    if key not in _known:
        _remember(key, _pool.submit(_sha256, path))


def _remember(key: tuple[str, int, int], digest: Future[str]) -> None:
    if len(_known) >= _KEEP:
        _known.pop(next(iter(_known)))
    _known[key] = digest


class Folded:
    """The sha256 of a plain file taken by a reader that reads the file whole anyway (``contract.traces
    .otlp``), so the file is read once, not twice: ``update`` with every byte in order, then ``done`` makes
    it the digest ``sha256_of`` returns for the unchanged file."""

    def __init__(self, path: Path) -> None:
        self.key, self.h = _key(path), hashlib.sha256()

    def update(self, block: bytes | bytearray | memoryview) -> None:
        self.h.update(block)

    def done(self) -> None:
        if self.key not in _known:
            known: Future[str] = Future()
            known.set_result(self.h.hexdigest())
            _remember(self.key, known)


def folded(path: Path) -> Folded | None:
    """A :class:`Folded` digest of ``path``, or None when its digest is known or on its way, or inside
    :func:`unrecorded`."""
    if not _RECORDED.get() or _key(path) in _known:
        return None
    return Folded(path)


def sha256_of(path: Path) -> str:
    """The file's sha256 as a hex string: from a :func:`prefetch` of the unchanged file, else read now."""
    known = _known.get(_key(path))
    return known.result() if known is not None else _sha256(path)
