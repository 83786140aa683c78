"""The DuckDB store: schema, transactional loading, and the connection helpers every layer above uses."""

from ragtriage.store.byo import LoadRequest, LoadSummary, RunSource, load_dataset, load_inputs, load_run
from ragtriage.store.connection import (
    DEFAULT_DB,
    StoreError,
    StoreLocked,
    connect,
    current_dataset_version,
    k_statement,
    latest_run,
    reading,
    require_run,
    run_ids,
    run_k,
    set_current_dataset,
)
from ragtriage.store.load import LoadReport

__all__ = [
    "DEFAULT_DB",
    "LoadReport",
    "LoadRequest",
    "LoadSummary",
    "RunSource",
    "load_inputs",
    "StoreError",
    "StoreLocked",
    "reading",
    "connect",
    "current_dataset_version",
    "k_statement",
    "latest_run",
    "load_dataset",
    "load_run",
    "require_run",
    "run_ids",
    "run_k",
    "set_current_dataset",
]
