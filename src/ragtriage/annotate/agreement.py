"""Inter-annotator agreement on double-labelled units, and the disagreements worth adjudicating.

A unit is double-labelled when two or more annotators (``adjudicated`` excluded) graded the same case and unit.
Each annotator's grade is their maximum for that unit (as the ``qrels`` view reads it). With more than two
annotators every pair counts once, the alphabetically first annotator as rater A, so the statistics are
pairwise Cohen's kappa pooled over pairs.

Kappa is computed on the confusion matrix over the dataset's whole grade scale (grade_min..grade_max), with
weights ``w_ij = 0/1`` (unweighted) or ``((i - j) / (K - 1))**2`` (quadratic): ``kappa = 1 - sum(w*O) / sum(w*E)``
where ``E`` is the outer product of the marginals over ``n``. It is undefined (NaN) when ``sum(w*E)`` is 0,
that is when both raters used a single grade.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.annotate.versions import dataset_row
from ragtriage.contract.dimensions import NO_VALUE, SLICE_DIMENSIONS, check_dimension
from ragtriage.metrics.slices import membership_sql
from ragtriage.store.connection import current_dataset_version

SLICE_COLUMNS = SLICE_DIMENSIONS  # the one list of slice dimensions (ragtriage.contract.dimensions)

_PER_ANNOTATOR = """
per_annotator AS (
    SELECT case_id, unit_id, annotator, max(grade) AS grade,
           arg_min(document_id, line) AS document_id, arg_min(chunk_id, line) AS chunk_id
    FROM labels WHERE annotator <> 'adjudicated' GROUP BY case_id, unit_id, annotator
)"""

_PAIRS_SQL = f"""
WITH {_PER_ANNOTATOR}
SELECT a.case_id, a.unit_id, a.annotator AS annotator_a, a.grade AS grade_a,
       b.annotator AS annotator_b, b.grade AS grade_b, m.v AS slice
FROM per_annotator a
JOIN per_annotator b ON a.case_id = b.case_id AND a.unit_id = b.unit_id AND a.annotator < b.annotator
JOIN (SELECT DISTINCT case_id, v FROM ({{members}})) m ON m.case_id = a.case_id
ORDER BY a.case_id, a.unit_id, a.annotator, b.annotator, m.v
"""

#: A unit's title and text from the corpus snapshot (a document's chunks joined in manifest order).
UNIT_TEXT = """SELECT unit_id, any_value(title ORDER BY position) AS title,
       string_agg(text, chr(10) || chr(10) ORDER BY position) AS text
FROM documents GROUP BY unit_id"""

_DISAGREEMENTS_SQL = f"""
WITH {_PER_ANNOTATOR}, spread AS (
    SELECT case_id, unit_id, min(grade) AS min_grade, max(grade) AS max_grade, count(*) AS n_annotators,
           string_agg(annotator || '=' || grade, '; ' ORDER BY annotator) AS grades,
           arg_min(document_id, annotator) AS document_id, arg_min(chunk_id, annotator) AS chunk_id
    FROM per_annotator GROUP BY case_id, unit_id
    HAVING count(*) >= 2 AND max(grade) - min(grade) >= $min_diff
), unit_text AS ({UNIT_TEXT})
SELECT s.case_id, c.query, s.unit_id, s.document_id, s.chunk_id, t.title, t.text, s.grades, s.min_grade,
       s.max_grade, s.n_annotators,
       EXISTS (SELECT 1 FROM labels l WHERE l.case_id = s.case_id AND l.unit_id = s.unit_id
               AND l.annotator = 'adjudicated') AS adjudicated,
       CAST(NULL AS INTEGER) AS grade, CAST(NULL AS VARCHAR) AS annotator, CAST(NULL AS VARCHAR) AS note
FROM spread s JOIN cases c USING (case_id) LEFT JOIN unit_text t USING (unit_id)
ORDER BY s.max_grade - s.min_grade DESC, s.case_id, s.unit_id
"""


@dataclass(frozen=True)
class Agreement:
    """Agreement over the pairs of one slice (``slice`` None for all pairs)."""

    slice: str | None
    pairs: int
    units: int
    raw: float
    kappa: float
    kappa_quadratic: float
    confusion: np.ndarray  # rows: rater A's grade, columns: rater B's grade, both grade_min..grade_max
    grades: tuple[int, ...]


def confusion_matrix(a: np.ndarray, b: np.ndarray, grades: tuple[int, ...]) -> np.ndarray:
    """Counts of (grade_a, grade_b) over the scale ``grades`` (consecutive integers)."""
    k = len(grades)
    m = np.zeros((k, k), dtype=np.int64)
    np.add.at(m, (a - grades[0], b - grades[0]), 1)
    return m


def kappa(confusion: np.ndarray, weights: str | None = None) -> float:
    """Cohen's kappa of a confusion matrix; ``weights`` None (unweighted), 'linear' or 'quadratic'."""
    return float(kappas(confusion[None], weights)[0])


def kappas(confusions: np.ndarray, weights: str | None = None) -> np.ndarray:
    """:func:`kappa` of each matrix of a stack (shape ``(B, K, K)``) at once: a bootstrap's resamples."""
    o = confusions.astype(np.float64)
    k = o.shape[-1]
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j) / max(k - 1, 1)
    elif weights == "quadratic":
        w = ((i - j) / max(k - 1, 1)) ** 2
    else:
        raise ValueError(f"unknown weights {weights!r}; use None, 'linear' or 'quadratic'")
    n = o.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        e = o.sum(axis=2)[:, :, None] * o.sum(axis=1)[:, None, :] / n[:, None, None]
        expected = (w * e).sum(axis=(1, 2))
        out = 1.0 - (w * o).sum(axis=(1, 2)) / expected
    return np.where((n == 0) | (expected == 0), np.nan, out)


def _stats(slice_: str | None, t: pa.Table, grades: tuple[int, ...]) -> Agreement:
    a = t.column("grade_a").to_numpy(zero_copy_only=False).astype(np.int64)
    b = t.column("grade_b").to_numpy(zero_copy_only=False).astype(np.int64)
    m = confusion_matrix(a, b, grades)
    units = t.select(["case_id", "unit_id"]).group_by(["case_id", "unit_id"]).aggregate([]).num_rows
    raw = float(np.trace(m) / m.sum()) if m.sum() else float("nan")
    return Agreement(slice_, int(m.sum()), units, raw, kappa(m), kappa(m, "quadratic"), m, grades)


def label_pairs(con: duckdb.DuckDBPyConnection, by: str | None = None) -> pa.Table:
    """One row per pair of annotators on one (case, unit) of the current version, with the slice value."""
    members = "SELECT case_id, CAST(NULL AS VARCHAR) AS v FROM cases"
    if by is not None:
        members = membership_sql(check_dimension(by))
    sql = _PAIRS_SQL.format(members=members)
    with con.cursor() as cur:
        return cur.sql(sql).to_arrow_table()


def agreement(con: duckdb.DuckDBPyConnection, by: str | None = None) -> list[Agreement]:
    """Overall agreement first, then one entry per value of ``by`` (a cases column) when given."""
    ds = dataset_row(con, current_dataset_version(con))
    grades = tuple(range(ds.grade_min, ds.grade_max + 1))
    pairs = label_pairs(con, by)
    out = [_stats(None, pairs, grades)]
    if by is not None:
        values = sorted(pc.unique(pairs.column("slice")).to_pylist(), key=lambda v: (v is None, v or ""))
        mask_col = pairs.column("slice")
        for v in values:
            mask = pc.is_null(mask_col) if v is None else pc.equal(mask_col, v)
            out.append(_stats(v if v is not None else NO_VALUE, pairs.filter(mask), grades))
    return out


def disagreements(con: duckdb.DuckDBPyConnection, min_diff: int = 2, *, include_adjudicated: bool = True) -> pa.Table:
    """Units whose annotators' grades differ by ``min_diff`` or more, ready to be adjudicated.

    The file written from this table imports back with ``import-labels FILE --annotator adjudicated``: fill
    ``grade`` (and ``note``) and the adjudicated grade wins in ``qrels``.
    """
    with con.cursor() as cur:
        t = cur.sql(_DISAGREEMENTS_SQL, params={"min_diff": min_diff}).to_arrow_table()
    if not include_adjudicated:
        t = t.filter(pc.invert(t.column("adjudicated")))
    return t
