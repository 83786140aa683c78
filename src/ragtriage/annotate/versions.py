"""New dataset versions made from a parent version plus imported labels, never by editing the parent.

The version id is a content hash, built with the loader's own pieces (``ragtriage.store.versioning``): the
dataset identity (name, manifest version, unit, threshold, scale, rubric, corpus snapshot) plus order-free
digests of the version's cases, labels and the corpus snapshot. The same content reached twice (say, the same
file imported twice) therefore gives the same id, and the second import only moves the pointer.

The digests here are taken over the *stored* columns (``all_cases``/``all_labels``), not over the staged input
files as the loader does, so an imported version and a folder holding the same rows do not share an id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from ragtriage.contract.fields import DOCUMENTS
from ragtriage.contract.staging import sql_str
from ragtriage.store.connection import set_current_dataset
from ragtriage.store.versioning import combine, relation_digest

CASE_COLUMNS = [
    "case_id",
    "query",
    "answerable",
    "expected_behavior",
    "principal_id",
    "principal_groups",
    "principal_tenant",
    "filters",
    "split",
    "source_family",
    "query_type",
    "language",
    "tags",
    "critical",
    "expected_scope",
]
LABEL_COLUMNS = ["case_id", "document_id", "chunk_id", "section_id", "unit_id", "grade", "annotator", "note"]


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> Any:
    """The single value of a one-row, one-column query (None when it returns no row)."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0][0] if rows else None


@dataclass(frozen=True)
class DatasetRow:
    """The parts of a ``datasets`` row that annotation needs."""

    version: str
    unit: str
    grade_min: int
    grade_max: int
    relevance_threshold: int
    rubric: dict[str, str]


def _row(con: duckdb.DuckDBPyConnection, version: str) -> tuple[Any, ...]:
    row = con.execute(
        """SELECT unit, grade_min, grade_max, relevance_threshold, rubric, name, version, rubric_version,
                  corpus_snapshot FROM datasets WHERE dataset_version = ?""",
        [version],
    ).fetchone()
    if row is None:
        raise ValueError(f"unknown dataset version {version!r}")
    return tuple(row)


def dataset_row(con: duckdb.DuckDBPyConnection, version: str) -> DatasetRow:
    row = _row(con, version)
    rubric = {str(k): str(v) for k, v in (json.loads(row[4]) if row[4] else {}).items()}
    return DatasetRow(version, str(row[0]), int(row[1]), int(row[2]), int(row[3]), rubric)


def _identity(con: duckdb.DuckDBPyConnection, parent: str) -> dict[str, object]:
    unit, grade_min, grade_max, threshold, rubric, name, version, rubric_version, snapshot = _row(con, parent)
    return {
        "name": name,
        "version": version,
        "unit": unit,
        "relevance_threshold": threshold,
        "grade_scale": [grade_min, grade_max],
        "rubric": json.loads(rubric) if rubric else None,
        "rubric_version": rubric_version,
        "corpus_snapshot": snapshot,
    }


def version_hash(con: duckdb.DuckDBPyConnection, parent: str, labels_relation: str) -> str:
    """Content hash of a version holding ``parent``'s cases and the labels in ``labels_relation``."""
    cases = f"(SELECT * FROM all_cases WHERE dataset_version = {sql_str(parent)})"
    digests = {
        "cases": relation_digest(con, cases, CASE_COLUMNS),
        "labels": relation_digest(con, labels_relation, LABEL_COLUMNS),
        "documents": relation_digest(con, "documents", DOCUMENTS.names()),
    }
    return combine(_identity(con, parent), digests)


@dataclass(frozen=True)
class Fork:
    """A child version written by :func:`fork_with_labels`."""

    version: str
    unchanged: bool  # the same content existed already: only the current pointer moved
    replaced: int  # parent labels a new label replaced (same case, unit and annotator)


CHILD_LABELS = "_child_version_labels"


def fork_with_labels(con: duckdb.DuckDBPyConnection, parent: str, new_labels: str) -> Fork:
    """Write a child of ``parent`` holding ``new_labels`` (a relation of ``LABEL_COLUMNS`` and ``line``) and make
    it current: a new label replaces the parent's label of the same case, unit and annotator (a re-judgement);
    every other parent label is carried over unchanged. Runs inside the caller's transaction."""
    cols = ", ".join(LABEL_COLUMNS)
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {CHILD_LABELS} AS
            SELECT {cols}, line FROM all_labels p
            WHERE p.dataset_version = {sql_str(parent)}
              AND NOT EXISTS (SELECT 1 FROM {new_labels} n WHERE n.case_id = p.case_id AND n.unit_id = p.unit_id
                              AND n.annotator = p.annotator)
            UNION ALL SELECT {cols}, line FROM {new_labels}"""
    )
    carried, added, parent_n = con.execute(
        f"""SELECT (SELECT count(*) FROM {CHILD_LABELS}), (SELECT count(*) FROM {new_labels}),
                   (SELECT count(*) FROM all_labels WHERE dataset_version = ?)""",
        [parent],
    ).fetchall()[0]
    version, unchanged = fork_version(con, parent, CHILD_LABELS)
    return Fork(version, unchanged, int(parent_n) - (int(carried) - int(added)))


def fork_version(con: duckdb.DuckDBPyConnection, parent: str, labels_relation: str) -> tuple[str, bool]:
    """Write a child of ``parent`` whose labels are ``labels_relation`` and make it current.

    Runs inside the caller's transaction. Returns (version, already_existed). The child's ``created_at`` is the
    time of the import: it is when its new labels were made, which ``dataset check`` compares with documents'
    ``updated_at``.
    """
    version = version_hash(con, parent, labels_relation)
    exists = scalar(con, "SELECT count(*) FROM datasets WHERE dataset_version = ?", [version]) > 0
    if not exists:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        con.execute(
            """INSERT INTO datasets SELECT * REPLACE (? AS dataset_version, ? AS parent_version, ? AS created_at,
                                                     now()::TIMESTAMP AS loaded_at)
               FROM datasets WHERE dataset_version = ?""",
            [version, parent, now, parent],
        )
        con.execute(
            "INSERT INTO all_cases SELECT * REPLACE (? AS dataset_version) FROM all_cases WHERE dataset_version = ?",
            [version, parent],
        )
        con.execute(
            f"""INSERT INTO all_labels BY NAME
                SELECT {sql_str(version)} AS dataset_version, {", ".join(LABEL_COLUMNS)}, line FROM {labels_relation}
                ORDER BY case_id, line"""  # case order, as the load stores labels (store/load.write_dataset)
        )
    set_current_dataset(con, version)
    return version, exists
