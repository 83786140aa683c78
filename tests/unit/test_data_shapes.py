"""bench/data_shapes.py writes what its shapes promise: benches state these properties beside their figures, so a
generator drifting from them would make every stated shape false."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from data_shapes import generate  # noqa: E402

RUN_COLUMNS = (
    "{'q': 'VARCHAR', 'q0': 'VARCHAR', 'doc': 'VARCHAR', 'rank': 'INTEGER', 'score': 'DOUBLE', 't': 'VARCHAR'}"
)
QRELS_COLUMNS = "{'q': 'VARCHAR', 'it': 'VARCHAR', 'doc': 'VARCHAR', 'grade': 'INTEGER'}"


def _run(path: Path) -> str:
    return f"read_csv('{path}', delim=' ', header=false, columns={RUN_COLUMNS})"


def _qrels(path: Path) -> str:
    return f"read_csv('{path}', delim=' ', header=false, columns={QRELS_COLUMNS})"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return con.execute(sql).fetchall()


def test_realistic_shape_holds_what_it_states(tmp_path: Path) -> None:
    data = generate(tmp_path / "r", 200_000, "realistic")
    con = duckdb.connect()
    run, unique, qrels = _run(data.run), _run(data.unique_run), _qrels(data.qrels)
    [(lo, hi, mean)] = _rows(con, f"SELECT min(n), max(n), avg(n) FROM (SELECT count(*) n FROM {run} GROUP BY q)")
    assert 10 <= lo < 20 and 200 < hi <= 281 and 85 < mean < 110  # uneven depth, mean ~100
    [(distinct, top)] = _rows(con, f"SELECT count(DISTINCT doc), max(doc) FROM {run}")
    assert distinct > 150_000 and len(top) == 7 and top > "d900000"  # drawn from 10^6
    assert _rows(con, f"SELECT 1 FROM {run} GROUP BY q, score HAVING count(*) > 1 LIMIT 1")  # ties
    assert _rows(con, f"SELECT count(*) FROM {run} WHERE score <> round(score, 2)") == [(0,)]
    repeats = f"SELECT count(DISTINCT q) FROM (SELECT q FROM {run} GROUP BY q, doc HAVING count(*) > 1)"
    assert _rows(con, repeats) == [(data.cases // 200,)]  # one list in 200 repeats a document
    assert _rows(con, f"SELECT 1 FROM {unique} GROUP BY q, doc HAVING count(*) > 1") == []
    assert _rows(con, f"SELECT (SELECT count(*) FROM {run}) - (SELECT count(*) FROM {unique})") == [
        (data.cases // 200,)
    ]
    order = "row_number() OVER (PARTITION BY q ORDER BY score DESC, doc DESC, rank)"
    assert _rows(con, f"SELECT count(*) FROM (SELECT rank, {order} AS pos FROM {run}) WHERE rank <> pos") == [(0,)]
    assert _rows(con, f"SELECT 1 FROM {qrels} GROUP BY q, doc HAVING count(*) > 1") == []
    assert _rows(con, f"SELECT min(grade), max(grade) FROM {qrels}") == [(0, 3)]
    assert data.repeated_qrels is not None
    more = f"SELECT (SELECT count(*) FROM {_qrels(data.repeated_qrels)}) - {data.qrels_lines}"
    [(extra,)] = _rows(con, more)
    assert extra == pytest.approx(data.qrels_lines / 200, rel=0.3)  # one judgment in 200 repeated
    assert _rows(con, f"SELECT count(*) FROM '{data.dataset / 'labels.parquet'}'") == [(data.qrels_lines,)]


def test_same_size_gives_the_same_bytes_and_regular_has_no_repeats(tmp_path: Path) -> None:
    a, b = generate(tmp_path / "a", 30_000, "realistic"), generate(tmp_path / "b", 30_000, "realistic")
    assert a.run.read_bytes() == b.run.read_bytes() and a.qrels.read_bytes() == b.qrels.read_bytes()
    reg = generate(tmp_path / "g", 30_000, "regular")
    assert reg.run_lines == 30_000 and reg.repeated_qrels is None and reg.unique_run == reg.run
    assert _rows(duckdb.connect(), f"SELECT 1 FROM {_run(reg.run)} GROUP BY q, doc HAVING count(*) > 1") == []


def test_chunks_shape_repeats_documents_in_almost_every_list(tmp_path: Path) -> None:
    data = generate(tmp_path / "c", 100_000, "chunks")
    con = duckdb.connect()
    results = f"'{data.run_dir('run-a') / 'results.parquet'}'"
    assert '"unit": "document"' in (data.dataset / "dataset.json").read_text()
    [(lists, repeating)] = _rows(
        con,
        f"""SELECT count(*), count(*) FILTER (WHERE docs < n) FROM (
                SELECT case_id, count(*) n, count(DISTINCT document_id) docs FROM {results} GROUP BY case_id)""",
    )
    assert lists == data.cases and repeating > 0.95 * lists
    assert _rows(con, f"SELECT 1 FROM {results} GROUP BY case_id, chunk_id HAVING count(*) > 1") == []
    assert _rows(con, f"SELECT count(*) FROM {results} WHERE NOT starts_with(chunk_id, document_id || '#')") == [(0,)]
    ranks = f"SELECT case_id, max(rank) = count(*) AS ok FROM {results} GROUP BY case_id"
    assert _rows(con, f"SELECT count(*) FROM ({ranks}) WHERE NOT ok") == [(0,)]
