"""A load as ``ragtriage load`` does it, for the CLI and the Python API alike: the store's one transaction
(``store.byo.load_inputs``), then the per-case tables (``metrics.summary_cache.warm``, read by the TUI, ``compare``
and the gate; the TUI's overview adds its summary's bootstrap intervals to the cache itself). Each run's
classification (read by ``failures``, the gate and the TUI) is left to the TUI's background worker, ``ragtriage
classify`` or the first command that reads it (``classify.chunked``: a chunk of cases at a time, resumable);
``wait_classified`` stores it here, before returning (``classify.refresh``). Each is done, or stated as skipped or
deferred in :class:`LoadResult`; nothing is printed here.

The summary cache is keyed by the store file as it is once closed, so it is filled by :func:`finish`, which closes
the connection first. :func:`load_store` does all of it for a store file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ragtriage.store.byo import LoadRequest, LoadSummary
from ragtriage.store.byo import load_inputs as load_store_tables
from ragtriage.store.load import Progress, noop


@dataclass
class LoadResult:
    """What one load wrote: the store's summary (``summary``), the runs classified and stored now
    (``classified``), the runs whose per-case table was cached now (``cached``), and a
    sentence for each precomputation that was skipped or failed (``skipped``: readers then compute on the fly)."""

    summary: LoadSummary
    precompute: bool = True
    wait_classified: bool = False
    classified: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def load_inputs(
    con: duckdb.DuckDBPyConnection,
    req: LoadRequest,
    progress: Progress = noop,
    *,
    precompute: bool = True,
    wait_classified: bool = False,
) -> LoadResult:
    """Load ``req`` into ``con`` (one transaction: everything or nothing); with ``wait_classified``, classify and
    store every run whose stored classification is missing or stale before returning. Call :func:`finish` with
    the result to close the store and cache its overview summaries. ``precompute=False`` stores the tables only."""
    if wait_classified and not precompute:
        raise ValueError("--wait-classified classifies at load; --no-precompute skips it: pass one of them")
    result = LoadResult(load_store_tables(con, req, progress), precompute, wait_classified)
    if not precompute:
        result.skipped.append("classification and overview summaries: skipped (precompute off)")
        return result
    if not wait_classified:
        result.skipped.append(
            "classification: left to `ragtriage tui` (in the background) or `ragtriage classify` "
            "(or: load --wait-classified)"
        )
        return result
    from ragtriage.classify import refresh  # only a load that classifies imports the classifier

    progress("classifying each run")
    try:
        result.classified = refresh(con)
    except Exception as exc:  # noqa: BLE001 - the data is loaded; readers classify on the fly
        result.skipped.append(f"classification not stored ({exc}); `failures` will classify on each call")
    return result


def finish(con: duckdb.DuckDBPyConnection, result: LoadResult) -> LoadResult:
    """Close ``con`` and, when the load precomputes, cache every run's overview summary and per-case table for the
    store file (an in-memory store or a cache turned off is stated as skipped)."""
    from ragtriage.metrics import summary_cache

    path = summary_cache.store_path(con)
    con.close()
    if not result.precompute:
        return result
    if path is None:
        result.skipped.append("overview summaries: skipped (an in-memory store has no cache)")
    elif summary_cache.cache_dir() is None:
        result.skipped.append(f"overview summaries: skipped ({summary_cache.CACHE_ENV} is off)")
    else:
        result.cached = summary_cache.warm(path)
    return result


def load_store(
    db: str | Path,
    req: LoadRequest,
    progress: Progress = noop,
    *,
    precompute: bool = True,
    wait_classified: bool = False,
) -> LoadResult:
    """``ragtriage load`` as a function: open (or create) the store file ``db``, load ``req``, precompute, close."""
    from ragtriage.store import connect

    con = connect(db)
    try:
        result = load_inputs(con, req, progress, precompute=precompute, wait_classified=wait_classified)
    except BaseException:
        con.close()
        raise
    return finish(con, result)


# A store built from files, kept in the cache folder ----------------------------------------------------------------

#: Where ``tui --qrels --run`` keeps the stores it builds (under ``paths.cache_root``).
STORES_FOLDER = "stores"
SUMMARIES_LEFT_TO_TUI = "overview summaries: left to the TUI, which keeps them in the cache once computed"


@dataclass(frozen=True)
class CachedStore:
    """The store of a set of input files in the cache folder: its path, and the load that built it now (None:
    the cache held it, nothing was loaded)."""

    path: Path
    built: LoadResult | None


def _digest_of(path: Path) -> str:
    """The sha256 of a file, or of a folder's files (their relative paths and contents, in path order)."""
    import hashlib

    from ragtriage.contract.digest import prefetch, sha256_of

    if not path.is_dir():
        return sha256_of(path)
    files = sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        prefetch(f)
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.relative_to(path).as_posix()}\0{sha256_of(f)}\n".encode())
    return h.hexdigest()


def store_key(req: LoadRequest) -> str:
    """What the store of ``req`` depends on: every input file's contents (never its name or time), the options
    that change what is stored, the store's schema and ragtriage's version."""
    import hashlib

    from ragtriage.contract.digest import prefetch
    from ragtriage.store.byo import RunSource
    from ragtriage.store.schema import SCHEMA_VERSION
    from ragtriage.version import installed_version

    named: list[tuple[str, Path]] = []
    for role, value in (("dataset", req.dataset), ("qrels", req.qrels), ("topics", req.topics)):
        if value is not None:
            named.append((role, Path(str(value))))
    for run in req.runs:
        source = run.source if isinstance(run, RunSource) else run
        if not isinstance(source, str | Path):
            raise ValueError("a cached store is built from files only; pass each run as a path")
        named.append(("run", Path(source)))
    for _, path in named:
        if path.is_file():
            prefetch(path)  # hashed on the hashing thread while the next is read
    h = hashlib.sha256(f"schema {SCHEMA_VERSION} ragtriage {installed_version()}\n".encode())
    h.update(repr((req.unit, req.threshold, req.grade_map, req.fmt, req.strict)).encode())
    for role, path in named:
        h.update(f"\n{role} {_digest_of(path)}".encode())
    return h.hexdigest()[:32]


def cached_store_path(req: LoadRequest, folder: Path | None = None) -> Path:
    """Where the store of ``req``'s files is (or will be) kept: ``folder`` (default ``paths.cache_root()/stores``,
    created here) and the files' key (:func:`store_key`)."""
    from ragtriage.paths import cache_root

    root = folder if folder is not None else cache_root() / STORES_FOLDER
    root.mkdir(parents=True, exist_ok=True)
    return root / f"{store_key(req)}.duckdb"


def cached_store(
    req: LoadRequest,
    *,
    rebuild: bool = False,
    progress: Progress = noop,
    folder: Path | None = None,
    target: Path | None = None,
) -> CachedStore:
    """The store of ``req``'s files in the cache folder (``folder``, default ``paths.cache_root()/stores``), built
    now when it is not there (or ``rebuild``): loaded into a temporary file beside it and renamed into place, so
    a reader never sees half a store, and built by one process at a time (a file lock: a second opening waits for
    the first and then reads its store). Notes beside a rebuilt store are kept. ``target``: the path
    :func:`cached_store_path` gave (the files are not hashed again).

    The overview summaries are not computed here: the TUI opening the store computes them once (means first,
    intervals after) and keeps them in the summary cache, so the first paint does not wait for the bootstrap."""
    target = target if target is not None else cached_store_path(req, folder)
    root = target.parent
    with _building(root / f"{target.stem}.lock"):
        if target.exists() and not rebuild:
            return CachedStore(target, None)
        scratch = root / f".{target.stem}.{os.getpid()}.building.duckdb"
        for stale in (scratch, scratch.with_name(scratch.name + ".wal")):
            stale.unlink(missing_ok=True)
        try:
            from ragtriage.store import connect

            con = connect(scratch)
            try:
                result = load_inputs(con, req, progress)
            finally:
                con.close()
            target.with_name(target.name + ".wal").unlink(missing_ok=True)
            os.replace(scratch, target)
        finally:
            scratch.unlink(missing_ok=True)
        result.skipped.append(SUMMARIES_LEFT_TO_TUI)
    return CachedStore(target, result)


class LoadStopped(Exception):
    """A :class:`BackgroundLoad` was stopped by its follower: the load ends at its next step, leaving no store."""


class BackgroundLoad:
    """:func:`cached_store` started at once on a thread of its own, so what the caller does next (a UI importing
    and starting) overlaps it; calling the object follows it: each step goes to ``progress`` (the last one again
    while none comes, so a ``progress`` that raises stops the load at its next step), and the result is returned
    or its error raised. ``what`` names the inputs (the app's progress screen shows it)."""

    HEARTBEAT_S = 0.25

    def __init__(self, req: LoadRequest, target: Path, *, rebuild: bool = False, what: str = "") -> None:
        import queue
        import threading
        from concurrent.futures import ThreadPoolExecutor

        self.what = what
        self._steps: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        pool = ThreadPoolExecutor(1, thread_name_prefix="ragtriage-load")
        self._running = pool.submit(cached_store, req, rebuild=rebuild, progress=self._step, target=target)
        pool.shutdown(wait=False)

    def _step(self, name: str) -> None:
        if self._stop.is_set():
            raise LoadStopped(name)
        self._steps.put(name)

    def __call__(self, progress: Progress) -> CachedStore:
        import queue

        last = "starting"
        try:
            while not (self._running.done() and self._steps.empty()):
                with suppress(queue.Empty):
                    last = self._steps.get(timeout=self.HEARTBEAT_S)
                progress(last)
        except BaseException:
            self._stop.set()
            raise
        return self._running.result()


@contextmanager
def _building(lock: Path) -> Iterator[None]:
    """One builder of a cached store at a time, across processes (an advisory lock; where the platform has none,
    the atomic rename still keeps the store whole)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
