"""Arrow data handed to one DuckDB statement.

``con.register`` keeps the table it is given, and every Arrow buffer DuckDB scanned from it, until the
transaction ends, even after ``unregister``: a load that streams batches inside its one transaction would hold all
of them. A relation's ``query`` lets go of them with the statement."""

from __future__ import annotations

import duckdb
import pyarrow as pa


def run_on_arrow(con: duckdb.DuckDBPyConnection, name: str, table: pa.Table | pa.RecordBatch, sql: str) -> None:
    """Run ``sql`` (a statement that returns nothing to read, such as an INSERT) with ``table`` visible as
    ``name``."""
    con.from_arrow(table).query(name, sql)
