"""A disk cache of ``metrics.summarize``'s table and of the per-case table under it, per store state, so the TUI's
overview of a large run paints at once and ``compare``/``gate`` read both runs' per-case values instead of
computing them: ``ragtriage load`` fills the per-case entry (:func:`warm`), the overview the summary entry.

The figures can only change when the run, the labels or the metrics code change, so every entry is keyed by what
its values depend on (:func:`per_case_key`: the store file, the current dataset version, the run's key and load
time, and the size and modification time of every source file of the packages they are computed by): a new load
or an edited metric definition is a miss; a write that changes neither (the classification stored after a load,
``gate --record``) keeps them. The per-case entry is ``per_case`` at :data:`DEFAULT_KS` (final stage, default
gain, every answerable case), zstd-compressed; a request at a subset of those cutoffs reads its columns
(:func:`per_case_columns`). Beside it, ``metrics.slices`` by the first slice dimension at the run's k
(:func:`cached_slices`), which the TUI's Slices view starts from. Entries are Arrow IPC files under
:func:`ragtriage.paths.cache_root` (``~/.cache/ragtriage/summary`` on Linux); ``RAGTRIAGE_TUI_CACHE`` names another
folder, or ``off`` disables the cache. A cache that cannot be read or written is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc

from ragtriage.contract.dimensions import SLICE_DIMENSIONS
from ragtriage.metrics.context import DEFAULT_KS, Request, request_in_use, resolve
from ragtriage.metrics.per_case import per_case_schema
from ragtriage.metrics.slices import slices
from ragtriage.paths import cache_root
from ragtriage.store.connection import CURRENT_VERSION, connect, run_ids, run_k, run_value

CACHE_ENV = "RAGTRIAGE_TUI_CACHE"
_CODE_PACKAGES = ("metrics", "store", "contract")


def cache_dir() -> Path | None:
    """Where entries live, or None when ``RAGTRIAGE_TUI_CACHE=off``."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "0", "off", "no") else Path(chosen)
    return cache_root() / "summary"


def _stat_part(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def code_fingerprint() -> str:
    """Size and mtime of the source files the figures depend on (a few dozen stat calls)."""
    root = Path(__file__).resolve().parent.parent
    parts = [_stat_part(p) for pkg in _CODE_PACKAGES for p in sorted((root / pkg).rglob("*.py"))]
    return "\n".join(parts)


def per_case_key(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The key of ``run_id``'s per-case entry: what its values depend on, read from the store (the store's file,
    the current dataset version, which is a hash of the cases, labels and rubric, the run's key and load time,
    and the code), not the file's size and time, so a write that changes neither the labels nor the run
    (``calibrate``, ``gate --record``, a reclassification) keeps the entry. None for an in-memory store or an
    unknown run."""
    path = store_path(con)
    if path is None:
        return None
    facts = f"[{CURRENT_VERSION}, CAST(run_key AS VARCHAR), CAST(loaded_at AS VARCHAR), unit, dataset_version]"
    row = run_value(con, run_id, facts)
    if row is None:
        return None
    asked = request_in_use()  # another label choice, population or threshold is another entry; the default's keep
    parts = [str(path.resolve()), run_id, *(str(v) for v in row), code_fingerprint()]
    raw = "\n".join(parts if asked == Request() else [*parts, repr(asked)])
    return hashlib.sha256(raw.encode()).hexdigest()[:32] + ".per-case"


def summary_key(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The key of ``run_id``'s summary entry: what the per-case entry's values depend on (:func:`per_case_key`),
    so a write that changes neither labels nor run (the classification stored after a load) keeps it."""
    base = per_case_key(con, run_id)
    return None if base is None else base.removesuffix(".per-case") + ".summary"


def load(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table | None:
    """The cached summary table for this store state, or None on a miss or an unreadable entry."""
    key = summary_key(con, run_id)
    return None if key is None else read_entry(key)


def save(con: duckdb.DuckDBPyConnection, run_id: str, table: pa.Table) -> bool:
    """Write the summary entry of this store state; False when the folder is not writable (or the store is in
    memory)."""
    key = summary_key(con, run_id)
    return key is not None and write_entry(key, table)


def read_entry(name: str) -> pa.Table | None:
    """The entry ``name`` (:func:`entry_key` or :func:`per_case_key`), or None on a miss or an unreadable one."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        with ipc.open_file(folder / f"{name}.arrow") as reader:
            return reader.read_all()
    except (OSError, pa.ArrowInvalid):
        return None


def write_entry(name: str, table: pa.Table, *, compressed: bool = False) -> bool:
    """Write one entry atomically (temp file + rename), zstd-compressed if asked (the per-case tables); False
    when the folder is not writable."""
    folder = cache_dir()
    if folder is None:
        return False
    target = folder / f"{name}.arrow"
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    options = ipc.IpcWriteOptions(compression="zstd") if compressed else None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        tmp.replace(target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        return False
    prune(folder, keep=target)
    return True


#: the folder's size above which the oldest entries go (every store state leaves entries behind)
MAX_BYTES = 512 << 20


def prune(folder: Path, *, keep: Path, limit: int = MAX_BYTES) -> int:
    """Delete the least recently written entries until the folder holds at most ``limit`` bytes (``keep``, just
    written, stays); returns how many went."""
    try:
        entries = [(e.stat().st_mtime_ns, e.stat().st_size, e) for e in folder.glob("*.arrow")]
    except OSError:
        return 0
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, entry in sorted(entries, key=lambda t: t[0]):
        if total <= limit:
            break
        if entry == keep:
            continue
        with contextlib.suppress(OSError):
            entry.unlink()
            total -= size
            removed += 1
    return removed


def warm(db_path: str | Path) -> list[str]:
    """Fill the per-case entry of every run of a store just written (``ragtriage load`` calls it after closing the
    store), so the first overview after a load, ``compare`` and ``gate`` read the per-case values instead of
    computing them, and the slices by the first dimension (:func:`slices_key`). The summary entry is left to its
    reader (the TUI's overview: it shows the means from the per-case values at once, then the bootstrap
    intervals, and keeps the table): the bootstrap is as costly as the per-case values on real-valued
    measures over many cases, and only the TUI reads it. Best effort: a run whose per-case values cannot be
    computed is skipped, and the TUI computes (and reports) them itself."""
    if cache_dir() is None:
        return []
    from ragtriage.metrics.per_case import per_case_context  # looked up per call: a test patches it there

    con = connect(db_path, read_only=True)
    done = []
    try:
        for rid in run_ids(con):
            key = per_case_key(con, rid)
            if key is None:
                break
            cases = None
            if read_entry(key) is None:
                try:
                    cases = per_case_context(con, resolve(con, rid, DEFAULT_KS), counts=False)
                except Exception:  # noqa: BLE001 - the TUI shows the core's own message for this run
                    continue
                if not write_entry(key, cases, compressed=True):
                    break
            _warm_slices(con, rid, cases)
            done.append(rid)
    finally:
        con.close()
    return done


def slices_key(con: duckdb.DuckDBPyConnection, run_id: str, by: str, ks: tuple[int, ...], k: int) -> str | None:
    """The key of ``run_id``'s slices by ``by`` at cutoffs ``ks`` and ``k`` (nDCG, exponential gain, every split,
    seed 0: what the TUI's Slices view and slice bars ask for): the per-case entry's key, which says what the
    values depend on, and the question. None where :func:`per_case_key` is None."""
    base = per_case_key(con, run_id)
    if base is None:
        return None
    question = "|".join([base, by, ",".join(map(str, ks)), str(k)])
    return hashlib.sha256(question.encode()).hexdigest()[:32] + ".slices"


def _warm_slices(con: duckdb.DuckDBPyConnection, run_id: str, cases: pa.Table | None) -> None:
    """Slices by the first dimension at the run's own k, when that k is a cached cutoff (the Slices
    view then lists them without computing them). ``cases``: the per-case table just computed, if any."""

    k, by = run_k(con, run_id), SLICE_DIMENSIONS[0]
    if k not in DEFAULT_KS:
        return
    key = slices_key(con, run_id, by, DEFAULT_KS, k)
    if key is None or read_entry(key) is not None:
        return
    cases = cases if cases is not None else per_case_columns(con, run_id, DEFAULT_KS)
    try:
        table = slices(con, run_id, by, DEFAULT_KS, k=k, per_case=cases)
    except Exception:  # noqa: BLE001 - the TUI computes the slices itself and shows the core's message
        return
    write_entry(key, table, compressed=True)


def cached_slices(con: duckdb.DuckDBPyConnection, run_id: str, by: str, ks: tuple[int, ...], k: int) -> pa.Table | None:
    """The slices :func:`warm` kept for this store state and question, or None (then computed by the caller)."""
    key = slices_key(con, run_id, by, ks, k)
    return read_entry(key) if key is not None else None


def store_path(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file of the store ``con`` reads (None for an in-memory database)."""
    cur = con.cursor()
    try:
        rows = cur.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    finally:
        cur.close()
    return Path(rows[0][0]) if rows and rows[0][0] else None


def per_case_kept(con: duckdb.DuckDBPyConnection, run_id: str, ks: tuple[int, ...]) -> pa.Table | None:
    """:func:`per_case_columns`, and on a miss the entry computed and written first, so only the first
    ``compare`` or ``gate`` after a code change or an older load pays for it (None where no entry can be kept:
    the caller then computes at ``ks`` itself)."""
    return per_case_columns(con, run_id, ks, fill=True)


def per_case_columns(
    con: duckdb.DuckDBPyConnection, run_id: str, ks: tuple[int, ...], *, fill: bool = False
) -> pa.Table | None:
    """The cached per-case table of ``run_id`` cut to the cutoffs ``ks`` (columns as ``per_case(...,
    counts=False)`` gives them), or None when the cache has no entry for this store state (``fill``: computed
    and written then, unless the store is in memory or the cache off) or ``ks`` is not a subset of the cached
    cutoffs."""

    from ragtriage.metrics.per_case import per_case_context  # looked up per call, as in :func:`warm`

    if not set(ks) <= set(DEFAULT_KS):
        return None
    key = per_case_key(con, run_id)
    table = read_entry(key) if key is not None else None
    if table is None and fill and key is not None and cache_dir() is not None:
        table = per_case_context(con, resolve(con, run_id, DEFAULT_KS), counts=False)
        write_entry(key, table, compressed=True)  # not writable: this call still answers from the table
    schema = per_case_schema(ks, counts=False)
    if table is None or not set(schema.names) <= set(table.column_names):
        return None
    return table.select(schema.names).cast(schema)
