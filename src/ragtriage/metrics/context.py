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
from ragtriage.contract.relevance import DEFAULT_MIN_OVERLAP, is_human, is_relevant, relevance_statement
from ragtriage.metrics.gain import DEFAULT_GAIN, GAINS, gain_sql
from ragtriage.store import StoreError, current_dataset_version, require_run
from ragtriage.store.schema import QRELS_WITH_JUDGE

DEFAULT_KS = (3, 5, 10)
#: Which labels the figures use: ``human`` (the store's ``qrels``) or ``with-judge`` (the holes filled by an LLM
#: judge's labels, ``store.schema.QRELS_WITH_JUDGE``).
LABEL_CHOICES = ("human", "with-judge")
#: Which labelled cases every mean is taken over (``--cases``): ``all`` (trec_eval's and ir_measures': a case with
#: labels but none relevant scores 0), ``with-relevant`` (only cases with a relevant label at the threshold in use)
#: or ``in-run`` (only cases the run has a list for: a trace run covers part of the dataset).
CASE_CHOICES = ("all", "with-relevant", "in-run")


@dataclass(frozen=True)
class Request:
    """What a user asked of every figure a command prints, beside the run and its cutoffs: the labels, the
    population and the relevance threshold (``None``: the dataset's). Set once by the entry point
    (:func:`using`) and read by :func:`resolve` alone, so no report function passes a setting through and none is
    dropped on the way."""

    labels: str = "human"
    cases: str = "all"
    threshold: int | None = None
    #: a span dataset's least overlap (characters) for a result to take an evidence span's grade (``--min-overlap``;
    #: ``None``: ``relevance.DEFAULT_MIN_OVERLAP``)
    min_overlap: int | None = None


#: The current :class:`Request`: the innermost :func:`using` block of this thread, else the process's
#: (:func:`use_for_process`: the TUI's worker threads do not inherit a block opened in the main thread).
_BLOCK: ContextVar[Request | None] = ContextVar("ragtriage_request", default=None)
_PROCESS = [Request()]


def use_for_process(asked: Request) -> None:
    """Every context this process resolves outside a :func:`using` block takes ``asked``: the settings of a
    long-lived process (``ragtriage tui``) whose reads run in worker threads."""
    _check(asked.labels, asked.cases, asked.min_overlap)
    _PROCESS[0] = asked


def _check(labels: str | None, cases: str | None, min_overlap: int | None = None) -> None:
    if min_overlap is not None and (
        isinstance(min_overlap, bool) or not isinstance(min_overlap, int) or min_overlap < 1
    ):
        raise MetricsError(f"--min-overlap {min_overlap!r}: give a whole number of characters >= 1")
    for value, choices, what in ((labels, LABEL_CHOICES, "labels"), (cases, CASE_CHOICES, "--cases")):
        if value is not None and value not in choices:
            raise MetricsError(f"{what} {value!r}: use one of {', '.join(choices)}")


@contextmanager
def using(
    *,
    labels: str | None = None,
    cases: str | None = None,
    threshold: int | None = None,
    min_overlap: int | None = None,
) -> Iterator[Request]:
    """Every context :func:`resolve` makes inside the block takes these settings (a command's ``--labels``,
    ``--cases``, ``--threshold``, ``--min-overlap``); a value left ``None`` keeps the enclosing block's."""
    now = request_in_use()
    _check(labels, cases, min_overlap)
    asked = Request(
        labels if labels is not None else now.labels,
        cases if cases is not None else now.cases,
        threshold if threshold is not None else now.threshold,
        min_overlap if min_overlap is not None else now.min_overlap,
    )
    token = _BLOCK.set(asked)
    try:
        yield asked
    finally:
        _BLOCK.reset(token)


@contextmanager
def using_labels(choice: str) -> Iterator[None]:
    """:func:`using` for the label choice alone (a command's ``--labels``)."""
    with using(labels=choice):
        yield


@contextmanager
def only_labels() -> Iterator[None]:
    """Inside the block every setting but the label choice is the default: for figures stored under the store's
    own settings (the classifier's cost), which a command's ``--cases`` or ``--threshold`` must not change."""
    token = _BLOCK.set(Request(labels=request_in_use().labels))
    try:
        yield
    finally:
        _BLOCK.reset(token)


def request_in_use() -> Request:
    """The settings of the current block (:func:`using`)."""
    return _BLOCK.get() or _PROCESS[0]


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
    #: which labelled cases count (:data:`CASE_CHOICES`); read by :meth:`population_sql` alone.
    population: str = "all"
    #: where :attr:`threshold` came from: ``--threshold`` or the dataset
    threshold_source: str = "dataset"
    #: unit ``span``: the least overlap that gives a result an evidence span's grade (``relevance.derived_grades``)
    min_overlap: int = DEFAULT_MIN_OVERLAP

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
        """The cases every mean is taken over, the one rule of every measure and command: those of
        :meth:`base_population_sql` with at least one label (a case without any label cannot be judged: trec_eval
        and ir_measures skip it too; :func:`population_counts` counts it for the header), then
        :attr:`population`: ``with-relevant`` keeps the cases with a relevant label at :attr:`threshold`,
        ``in-run`` those the run has a list for in :attr:`stage`."""
        base, params = self.base_population_sql(trec=trec)
        qrels, qrels_params = self.qrels_sql(human=True)
        sql, params = f"SELECT case_id FROM ({base}) SEMI JOIN {qrels} USING (case_id)", params + qrels_params
        if self.population == "with-relevant":
            sql += f" WHERE case_id IN (SELECT case_id FROM {qrels} WHERE {is_relevant('grade', self.threshold)})"
            params += qrels_params
        elif self.population == "in-run":
            sql += " WHERE case_id IN (SELECT case_id FROM results WHERE run_id = ? AND stage = ?)"
            params += [self.run_id, self.stage]
        return sql, params

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
    gain: str = DEFAULT_GAIN,
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
    asked = request_in_use()
    if asked.min_overlap is not None and row[1] != "span":
        raise MetricsError(f"--min-overlap is for a dataset of unit span; this dataset's unit is {row[1]}")
    threshold, source = (int(row[0]), "dataset") if asked.threshold is None else (asked.threshold, "--threshold")
    return EvalContext(
        run_id,
        stage,
        parse_ks(ks),
        gain,
        split,
        threshold,
        str(row[1]),
        chosen,
        asked.labels,
        asked.cases,
        source,
        DEFAULT_MIN_OVERLAP if asked.min_overlap is None else asked.min_overlap,
    )


def context_of(
    con: duckdb.DuckDBPyConnection,
    run: str | EvalContext,
    ks: Sequence[int] = DEFAULT_KS,
    *,
    stage: str = "final",
    gain: str = DEFAULT_GAIN,
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
        con.execute("SET enable_progress_bar = false")  # nothing but the caller's output on the terminal
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


def population_header(counts: dict[str, int], population: str = "all") -> dict[str, Any]:
    """The population figures as the output header names them (every command prints the same words), after the
    rule that chose them (``--cases``)."""
    return {
        "population": population,
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
    if (labels or request_in_use().labels) == "human":
        stored = f" ({row['labels']} judged label(s) stored, not used)" if row["labels"] else ""
        return {"labels": f"human only{stored}", **request_header()}
    judged = f"human + judged: {row['holes']} judged label(s) fill unjudged units ({row['judges']} judge(s))"
    return {"labels": judged, **request_header()}


def request_header() -> dict[str, str]:
    """The population rule and an asked threshold, beside the labels line of every command that prints figures
    (the counts are the per-figure ``n``, or the population header where a command prints one)."""
    asked = request_in_use()
    out = {"population": asked.cases}
    if asked.threshold is not None:
        out["relevance threshold"] = relevance_statement(asked.threshold, "--threshold")
    if asked.min_overlap is not None:
        out["min overlap"] = f"{asked.min_overlap} characters (--min-overlap)"
    return out
