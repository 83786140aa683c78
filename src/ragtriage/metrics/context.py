"""What every metric query needs to know: the run, the stage, the cutoffs, the relevance threshold and the gain.

Resolving these once (and refusing bad values with a message that says what to pass instead) keeps the SQL of
each report free of validation, and lets every report print the threshold and gain its figures were made with.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from ragtriage.contract.fields import SPLITS, STAGES
from ragtriage.contract.limits import MAX_CUTOFF
from ragtriage.contract.relevance import is_human
from ragtriage.metrics.gain import GAINS, gain_sql
from ragtriage.store import StoreError, current_dataset_version, require_run
from ragtriage.store.schema import QRELS_WITH_JUDGE

DEFAULT_KS = (3, 5, 10)
#: Which labels the figures use: ``human`` (the store's ``qrels``) or ``with-judge`` (the holes filled by an LLM
#: judge's labels, ``store.schema.QRELS_WITH_JUDGE``).
LABEL_CHOICES = ("human", "with-judge")
_LABELS: ContextVar[str] = ContextVar("ragtriage_labels", default="human")


@contextmanager
def using_labels(choice: str) -> Iterator[None]:
    """Every context :func:`resolve` makes inside the block uses ``choice`` of labels (a command's ``--labels``):
    the one switch, so no report function has to pass it through."""
    if choice not in LABEL_CHOICES:
        raise MetricsError(f"labels {choice!r}: use one of {', '.join(LABEL_CHOICES)}")
    token = _LABELS.set(choice)
    try:
        yield
    finally:
        _LABELS.reset(token)


def labels_in_use() -> str:
    """The label choice of the current block (``human`` outside :func:`using_labels`)."""
    return _LABELS.get()


class MetricsError(ValueError):
    """A metrics request that cannot be answered as asked (bad k, unknown stage, split or gain)."""


@dataclass(frozen=True)
class EvalContext:
    run_id: str
    stage: str
    ks: tuple[int, ...]
    gain: str
    split: str | None
    threshold: int
    unit: str
    #: Only these cases (a case screen's one case), or every case when None.
    cases: tuple[str, ...] | None = None
    #: ``human`` or ``with-judge`` (:data:`LABEL_CHOICES`); read by :meth:`qrels_sql` alone.
    labels: str = "human"

    @property
    def depth(self) -> int:
        return max(self.ks)

    def case_filter(self) -> tuple[str, list[Any]]:
        """`` AND <condition>`` and its parameter keeping the chosen cases' rows (nothing for every case): added
        to a scan of ``results``, so one case reads its own rows only."""
        if self.cases is None:
            return "", []
        return " AND case_id IN (SELECT unnest(?::VARCHAR[]))", [list(self.cases)]

    def gain_sql(self, grade: str) -> str:
        return gain_sql(self.gain, grade)

    def base_population_sql(self, *, trec: bool = False) -> tuple[str, list[Any]]:
        """The cases a mode considers before the label rule: answerable cases (default) or every case (trec_eval
        knows no answerability), of one split when asked."""
        where = [] if trec else ["answerable"]
        params: list[Any] = []
        if self.split is not None:
            where.append("split = ?")
            params.append(self.split)
        cut, cut_params = self.case_filter()
        if cut:
            where.append(cut.removeprefix(" AND "))
            params += cut_params
        return "SELECT case_id FROM cases" + (f" WHERE {' AND '.join(where)}" if where else ""), params

    def population_sql(self, *, trec: bool = False) -> tuple[str, list[Any]]:
        """The cases every mean is taken over: those of :meth:`base_population_sql` with at least one label. A case
        without any label cannot be judged (trec_eval and ir_measures skip it too); :func:`population_counts`
        counts it for the header."""
        base, params = self.base_population_sql(trec=trec)
        qrels, qrels_params = self.qrels_sql(human=True)
        return f"SELECT case_id FROM ({base}) SEMI JOIN {qrels} USING (case_id)", params + qrels_params

    def qrels_sql(self, *, human: bool = False) -> tuple[str, list[Any]]:
        """The qrels relation and its parameters: cut to the chosen cases by a filter (a semi join against the
        cases would build a hash table of every label of the store). The judged labels of ``with-judge`` fill
        holes in the grades only: which cases are evaluated (``human=True``) is the people's call either way, so
        the figures with and without them are over the same cases."""
        cut, cut_params = self.case_filter()
        qrels = "qrels" if human or self.labels == "human" else f"({QRELS_WITH_JUDGE})"
        return (qrels, []) if not cut else (f"(SELECT * FROM {qrels} WHERE {cut.removeprefix(' AND ')})", cut_params)


def parse_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """Cutoffs as a sorted tuple of distinct positive ints (a command-line string is the CLI's to parse)."""
    out = tuple(sorted({int(k) for k in ks}))
    if not out or out[0] < 1:
        raise MetricsError(f"cutoffs {list(ks)!r}: give at least one k >= 1, e.g. 3,5,10")
    if out[-1] > MAX_CUTOFF:
        raise MetricsError(f"cutoff {out[-1]} is out of range: k is at most {MAX_CUTOFF}")
    return out


def resolve(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = "exponential",
    split: str | None = None,
    cases: Sequence[str] | None = None,
) -> EvalContext:
    """The evaluation context of one run, resolved once by a command and passed down: every value checked (a
    message says what to pass instead), the dataset's threshold and unit read from the store."""
    if stage not in STAGES:
        raise MetricsError(f"stage {stage!r}: use one of {', '.join(STAGES)}")
    if gain not in GAINS:
        raise MetricsError(f"gain {gain!r}: use one of {', '.join(GAINS)}")
    if split is not None and split not in SPLITS:
        raise MetricsError(f"split {split!r}: use one of {', '.join(SPLITS)}")
    cur = con.cursor()
    try:
        current_dataset_version(cur)
        require_run(cur, run_id)
        row = cur.execute("SELECT relevance_threshold, unit FROM current_dataset").fetchone()
    finally:
        cur.close()
    if row is None:
        raise StoreError("no current dataset; run `ragtriage load --dataset DIR` first")
    chosen = None if cases is None else tuple(str(c) for c in cases)
    return EvalContext(run_id, stage, parse_ks(ks), gain, split, int(row[0]), str(row[1]), chosen, _LABELS.get())


def context_of(
    con: duckdb.DuckDBPyConnection,
    run: str | EvalContext,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = "exponential",
    split: str | None = None,
) -> EvalContext:
    """``run`` itself when a command resolved its context already, else :func:`resolve` of the run id."""
    if isinstance(run, EvalContext):
        return run
    return resolve(con, run, ks, stage=stage, gain=gain, split=split)


def arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None, **tables: pa.Table) -> pa.Table:
    """Run ``sql`` on a cursor of its own (DuckDB 2 refuses new work while a result is open) with Arrow inputs."""
    cur = con.cursor()
    try:
        for name, table in tables.items():
            cur.register(name, table)
        return cur.sql(sql, params=params or []).to_arrow_table()
    finally:
        cur.close()


def over_arrow(sql: str, params: dict[str, Any] | None = None, **tables: pa.Table) -> pa.Table:
    """Run ``sql`` over Arrow tables alone (no store) on a throwaway in-memory DuckDB: set-based work on results."""
    con = duckdb.connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        return con.sql(sql, params=params or {}).to_arrow_table()
    finally:
        con.close()


def unlabelled_count(con: duckdb.DuckDBPyConnection, ctx: EvalContext, *, trec: bool = False) -> int:
    """Cases of the mode's base population that have no label at all (excluded from every measure)."""
    row = arrow(con, *unlabelled_sql(ctx, trec=trec)).to_pylist()
    return int(row[0]["n"])


def unlabelled_sql(ctx: EvalContext, *, trec: bool = False) -> tuple[str, list[Any]]:
    """The query of :func:`unlabelled_count` (one row, ``n``) and its parameters, for any engine."""
    base, params = ctx.base_population_sql(trec=trec)
    qrels, qrels_params = ctx.qrels_sql(human=True)
    return f"SELECT count(*) AS n FROM ({base}) ANTI JOIN {qrels} USING (case_id)", params + qrels_params


def population_header(counts: dict[str, int]) -> dict[str, int]:
    """The population figures as the output header names them (every command prints the same words)."""
    return {
        "cases": counts["cases"],
        "excluded, no labels": counts["unlabelled"],
        "without relevant label": counts["without_relevant"],
        "absent from run (score 0)": counts["absent"],
    }


def labels_header(con: duckdb.DuckDBPyConnection, labels: str | None = None) -> dict[str, str]:
    """The header line saying which labels the figures use and how many of them a judge made (every command that
    prints figures shows it, so judged labels never pass as a person's)."""
    row = arrow(
        con,
        f"""SELECT count(*) AS labels, count(DISTINCT annotator) AS judges,
                   count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM qrels q WHERE q.case_id = l.case_id
                                                      AND q.unit_id = l.unit_id)) AS holes
            FROM labels l WHERE NOT {is_human("l.annotator")}""",
    ).to_pylist()[0]
    if (labels or labels_in_use()) == "human":
        stored = f" ({row['labels']} judged label(s) stored, not used)" if row["labels"] else ""
        return {"labels": f"human only{stored}"}
    return {"labels": f"human + judged: {row['holes']} judged label(s) fill unjudged units ({row['judges']} judge(s))"}
