"""The DuckDB store: schema, transactional loading, and the connection helpers every layer above uses."""

from ragtriage.store.byo import LoadRequest, LoadSummary, RunSource, load_dataset, load_inputs, load_run
from ragtriage.store.connection import (
    DEFAULT_DB,
    StoreError,
    connect,
    current_dataset_version,
    require_run,
    run_ids,
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
    "connect",
    "current_dataset_version",
    "load_dataset",
    "load_run",
    "require_run",
    "run_ids",
    "set_current_dataset",
]
