"""Arrow → numpy without pyarrow's to_numpy: nulls dropped, sliced chunks read at their offset."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from ragtriage.arrays import non_null_values


def test_values_skip_nulls_and_respect_chunk_offsets() -> None:
    sliced = pa.array([9.0, 1.5, None, 2.5]).slice(1)
    col = pa.chunked_array([sliced, pa.array([], pa.float64()), pa.array([4.0, None])])
    got = non_null_values(col, np.float64)
    assert got.dtype == np.float64 and got.tolist() == [1.5, 2.5, 4.0]
    hashes = pa.array([2**64 - 1, None, 7], pa.uint64())
    assert non_null_values(hashes, np.uint64).tolist() == [2**64 - 1, 7]
    assert non_null_values(pa.chunked_array([], pa.float64()), np.float64).tolist() == []


def test_reading_values_does_not_import_pandas() -> None:
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from ragtriage.arrays import non_null_values\n"
        # from_buffers: converting a Python list would itself import pandas
        "col = pa.Array.from_buffers(pa.float64(), 2, [None, pa.py_buffer(np.array([1.0, 2.0]).tobytes())])\n"
        "assert 'pandas' not in sys.modules\n"
        "print(non_null_values(col, np.float64).tolist(), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[1.0, 2.0] False"


@pytest.mark.slow
def test_rows_of_some_cases_keep_the_table_order_and_never_import_pandas() -> None:
    code = (
        "import sys, duckdb\n"
        "from ragtriage.arrays import rows_where_in\n"
        "from ragtriage.tui.screens.table_view import CaseIds\n"
        "t = duckdb.sql(\"SELECT * FROM (VALUES ('q2', 1), ('q1', 2), ('q2', 3), ('q3', 4)) v(case_id, n)\")"
        ".to_arrow_table()\n"
        "got = rows_where_in(t, 'case_id', ['q2', 'q3'])\n"
        "assert got.column('n').to_pylist() == [1, 3, 4], got\n"
        "assert rows_where_in(t, 'case_id', ['zz']).num_rows == 0\n"
        "assert rows_where_in(t.slice(0, 0), 'case_id', ['q2']).num_rows == 0\n"
        # one in-memory database serves every thread, each call on a cursor of its own
        "from concurrent.futures import ThreadPoolExecutor\n"
        "want = {c: [r['n'] for r in t.to_pylist() if r['case_id'] == c] for c in ('q1', 'q2', 'q3')}\n"
        "with ThreadPoolExecutor(8) as pool:\n"
        "    got = list(pool.map(lambda c: (c, rows_where_in(t, 'case_id', [c]).column('n').to_pylist()),\n"
        "                        ['q1', 'q2', 'q3'] * 100))\n"
        "assert all(n == want[c] for c, n in got), got\n"
        "ids = CaseIds(t.column('case_id'))\n"
        "assert (len(ids), ids[1], ids[-1], ids[1:3]) == (4, 'q1', 'q3', ['q1', 'q2'])\n"
        "assert (ids.position('q3', 3), ids.position('q3', 0), ids.position('q1', None), ids.position('x', 1)) "
        "== (3, 3, 1, -1)\n"
        "assert 'pandas' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_an_integer_array_over_its_buffer_keeps_every_value_without_pandas() -> None:
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from ragtriage.arrays import over_buffer\n"
        "big = over_buffer(np.array([0, 2**64 - 1, 7], dtype=np.uint64))\n"
        "signed = over_buffer(np.array([-3, 2**63 - 1], dtype=np.int64)[::-1])\n"  # a strided view is copied
        "print(big.type, big.to_pylist(), signed.type, signed.to_pylist(), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [
        *("uint64", "[0,", "18446744073709551615,", "7]"),
        *("int64", "[9223372036854775807,", "-3]"),
        "False",
    ]


def test_table_of_builds_nulls_strings_and_flags_without_pandas() -> None:
    code = (
        "import sys, numpy as np, pyarrow as pa\n"
        "from ragtriage.arrays import table_of\n"
        "schema = pa.schema([('s', pa.string()), ('v', pa.float64()), ('n', pa.int64()), ('b', pa.bool_())])\n"
        "t = table_of({'s': np.array(['nDCG@10', None, 'é\\x1b[2J', ''], dtype=object),\n"
        "              'v': np.array([0.5, np.nan, 1.0, -0.0]), 'n': np.arange(4, dtype=np.int64),\n"
        "              'b': np.array([True, False, False, True])}, schema)\n"
        "t.validate(full=True)\n"
        "empty = table_of({'s': np.array([], dtype=object)}, pa.schema([schema.field('s')]))\n"
        "assert t.schema == schema and empty.num_rows == 0\n"
        "print(t.to_pylist(), 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == (
        "[{'s': 'nDCG@10', 'v': 0.5, 'n': 0, 'b': True}, {'s': None, 'v': None, 'n': 1, 'b': False}, "
        "{'s': 'é\\x1b[2J', 'v': 1.0, 'n': 2, 'b': False}, {'s': '', 'v': -0.0, 'n': 3, 'b': True}] False"
    )


def test_table_of_writes_what_duckdb_would_and_refuses_a_rounded_integer() -> None:
    """Where the conversion it replaced (DuckDB's) would change a value, table_of writes DuckDB's text or refuses:
    a flag in a text column reads ``true``, and a fractional number never becomes a truncated integer."""
    import duckdb
    import pyarrow as pa
    import pytest

    from ragtriage.arrays import table_of

    flags = np.array([True, None, np.bool_(False)], dtype=object)
    got = table_of({"s": flags}, pa.schema([("s", pa.string())]))["s"].to_pylist()
    want = [r[0] for r in duckdb.sql("SELECT CAST(v AS VARCHAR) FROM unnest([true, NULL, false]) t(v)").fetchall()]
    assert got == want == ["true", None, "false"]
    whole = table_of({"n": np.array([3.0, np.nan, -2.0])}, pa.schema([("n", pa.int64())]))
    assert whole["n"].to_pylist() == [3, None, -2]
    with pytest.raises(ValueError, match="fractional value cannot be an int64 column: 2.5"):
        table_of({"n": np.array([1.0, 2.5])}, pa.schema([("n", pa.int64())]))
    with pytest.raises(ValueError, match="fractional"):
        table_of({"n": np.array([1, 0.5], dtype=object)}, pa.schema([("n", pa.int64())]))
