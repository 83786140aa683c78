"""A load as ``ragtriage load`` does it, for the CLI and the Python API alike: the store's one transaction
(``store.byo.load_inputs``), then the overview summaries and per-case tables (``metrics.summary_cache.warm``, read
by the TUI, ``compare`` and the gate). Each run's classification (read by ``failures``, the gate and the TUI) is
left to the TUI's background worker, ``ragtriage classify`` or the first command that reads it
(``classify.chunked``: a chunk of cases at a time, resumable); ``wait_classified`` stores it here, before
returning (``classify.refresh``). Each is done, or stated as skipped or deferred in :class:`LoadResult`; nothing
is printed here.

The summary cache is keyed by the store file as it is once closed, so it is filled by :func:`finish`, which closes
the connection first. :func:`load_store` does all of it for a store file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ragtriage.store.byo import LoadRequest, LoadSummary
from ragtriage.store.byo import load_inputs as load_store_tables
from ragtriage.store.load import Progress, noop


@dataclass
class LoadResult:
    """What one load wrote: the store's summary (``summary``), the runs classified and stored now
    (``classified``), the runs whose overview summary and per-case table were cached now (``cached``), and a
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
    from ragtriage.classify import refresh

    if wait_classified and not precompute:
        raise ValueError("--wait-classified classifies at load; --no-precompute skips it: pass one of them")
    result = LoadResult(load_store_tables(con, req, progress), precompute, wait_classified)
    if not precompute:
        result.skipped.append("classification and overview summaries: skipped (precompute off)")
        return result
    if not wait_classified:
        result.skipped.append(
            "classification: deferred (the TUI classifies in the background, `ragtriage classify` stores it "
            "now, and `failures`/`gate`/`report` classify what they read; `load --wait-classified` waits for it)"
        )
        return result
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
