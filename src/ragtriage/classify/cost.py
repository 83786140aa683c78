"""What each defect category costs a run: the nDCG@k lost to it, so triage starts where the loss is largest.

Formula (docs/classifier.md, "What each category costs"). Every missing relevant unit of a failing answerable case
has the category of its own defect, read from its location (``rules.UNIT_CATEGORY``). Fixing category C in a
case means:

* ranking, ingestion, undetermined: the case's missing units of C enter the final top k, highest gain first, into
  the best positions not held by a relevant unit (positions past the end of a short list count as free); the
  relevant units already found stay where they are; a displaced non-relevant unit's gain is lost;
* dataset: the labels of the case's missing units of C are dropped (the ideal DCG shrinks); when nothing with a
  positive gain is left, the case counts as fully fixed (nDCG 1).

cost(C) = sum over failing cases with a defect of C of (nDCG@k fixed for C - nDCG@k now) / N, where N is the
number of cases the run's mean nDCG@k is taken over (answerable cases with a relevant label, as
``metrics.per_case``) and DCG, ideal DCG and gains are the metrics' own definitions. Each category is fixed
alone, so the costs need not add up to the gap (1 - mean): a slot can take one unit only, and a case whose
relevant units are all found still loses to their order, which no category is charged for.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ragtriage.classify.decide import in_failures
from ragtriage.classify.facts import LABELLED_TABLE
from ragtriage.classify.rules import ANSWERABLE, UNIT_CATEGORY
from ragtriage.contract.relevance import is_relevant
from ragtriage.metrics.context import EvalContext, only_labels, resolve
from ragtriage.metrics.engine import evaluate
from ragtriage.metrics.gain import dcg_sql, discount_sql, ideal_dcg_sql
from ragtriage.metrics.measures import Measure

# Categories a measure can be lost to (security is a hard failure, never a measure).
COST_CATEGORIES = ("ranking", "ingestion", "dataset", "undetermined")


@dataclass(frozen=True)
class CategoryCost:
    category: str
    cost: float  # measure lost, on the run's mean
    cases: int  # failing cases with a defect of this category


@dataclass(frozen=True)
class CostReport:
    """The measure lost to each category for one run at one k, largest first."""

    run_id: str
    measure: str  # e.g. "nDCG@10"
    k: int
    mean: float | None  # the run's mean of ``measure`` (None: no case with a relevant label)
    population: int
    costs: tuple[CategoryCost, ...]

    @property
    def gap(self) -> float | None:
        return None if self.mean is None else 1.0 - self.mean

    def sentence(self) -> str:
        """'ranking defects cost 0.118 nDCG@10, ingestion 0.031, dataset 0.012 of the 0.270 gap to 1.0'."""
        shown = [c for c in self.costs if c.cases > 0]
        if self.gap is None:
            return f"no case with a relevant label: {self.measure} has no mean"
        if not shown:
            return f"no failure costs {self.measure}; the {self.gap:.3f} gap to 1.0 is ordering within k"
        parts = [f"{shown[0].category} defects cost {shown[0].cost:.3f} {self.measure}"]
        parts += [f"{c.category} {c.cost:.3f}" for c in shown[1:]]
        return ", ".join(parts) + f" of the {self.gap:.3f} gap to 1.0"

    def to_table(self) -> pa.Table:
        return pa.table(
            {
                "category": [c.category for c in self.costs],
                "cost": pa.array([c.cost for c in self.costs], pa.float64()),
                "cases": pa.array([c.cases for c in self.costs], pa.int64()),
                "measure": [self.measure] * len(self.costs),
                "mean": pa.array([self.mean] * len(self.costs), pa.float64()),
                "population": pa.array([self.population] * len(self.costs), pa.int64()),
            }
        )

    @classmethod
    def from_table(cls, run_id: str, k: int, table: pa.Table) -> CostReport:
        rows = table.to_pylist()
        costs = tuple(CategoryCost(r["category"], float(r["cost"]), int(r["cases"])) for r in rows)
        mean = rows[0]["mean"] if rows else None
        population = int(rows[0]["population"]) if rows else 0
        return cls(run_id, f"nDCG@{k}", k, mean, population, _ordered(costs))


def _ordered(costs: tuple[CategoryCost, ...]) -> tuple[CategoryCost, ...]:
    return tuple(sorted(costs, key=lambda c: (-c.cost, COST_CATEGORIES.index(c.category))))


def _cost_sql(gain: str, k: int) -> str:
    """One statement over the failing cases' facts. No list is unnested: a judged unit's position is looked up in
    the case's top-k list, and the j-th free position is computed from the sorted positions of the relevant units
    found (each found one at or before it pushes it one further), so the work grows with the labels, not with k.
    A case has at most one answerable failure row (the facts name it by its count of units found), so its lists
    are read as they are: grouping them by case to be sure cost 40% of this statement."""
    return f"""
WITH failing AS MATERIALIZED (
    SELECT case_id, top_units, missing FROM _cost_facts WHERE {in_failures(ANSWERABLE)} AND n_relevant > 0
),
g AS (
    SELECT q.case_id, q.unit_id, {is_relevant("q.grade", "$threshold")} AS rel, {gain} AS g,
           nullif(list_position(f.top_units, q.unit_id), 0) AS pos
    FROM qrels q JOIN failing f USING (case_id)
),
missing_units AS (
    SELECT case_id, u.unit_id AS unit_id, {UNIT_CATEGORY} AS category
    FROM (SELECT case_id, unnest(missing) AS u FROM failing)
),
now AS (
    SELECT case_id, coalesce({dcg_sql(k, "g")}, 0.0) AS dcg,
           coalesce(list_sort(list(pos) FILTER (WHERE rel AND pos <= {k})), []) AS found_pos
    FROM g GROUP BY case_id
),
cats AS (SELECT DISTINCT case_id, category FROM missing_units),
ideal AS (
    SELECT c.case_id, c.category, list(g.g ORDER BY g.g DESC) FILTER (WHERE g.g > 0) AS gains,
           list(g.g ORDER BY g.g DESC) FILTER (WHERE g.g > 0 AND m.unit_id IS NULL) AS fixed_gains
    FROM cats c JOIN g USING (case_id)
    LEFT JOIN missing_units m ON m.case_id = g.case_id AND m.unit_id = g.unit_id AND m.category = 'dataset'
                             AND c.category = 'dataset'
    GROUP BY c.case_id, c.category
),
placed AS (
    SELECT m.case_id, m.category, coalesce(g.g, 0.0) AS g,
           row_number() OVER (PARTITION BY m.case_id, m.category ORDER BY g.g DESC NULLS LAST, m.unit_id) AS j
    FROM missing_units m LEFT JOIN g USING (case_id, unit_id) WHERE m.category <> 'dataset'
),
slotted AS (
    SELECT p.case_id, p.category, p.g,
           list_reduce(w.found_pos, lambda acc, r: CASE WHEN r <= acc THEN acc + 1 ELSE acc END, p.j) AS slot
    FROM placed p JOIN now w USING (case_id)
),
moved AS (
    SELECT s.case_id, s.category, sum((s.g - coalesce(d.g, 0.0)) / {discount_sql("s.slot")}) AS delta
    FROM slotted s LEFT JOIN g d ON d.case_id = s.case_id AND d.pos = s.slot
    WHERE s.slot <= {k} GROUP BY s.case_id, s.category
),
idcg AS (
    SELECT case_id, category, {ideal_dcg_sql(k, "gains")} AS idcg, {ideal_dcg_sql(k, "fixed_gains")} AS idcg_fixed
    FROM ideal
),
scored AS (
    SELECT i.case_id, i.category, coalesce(w.dcg / nullif(i.idcg, 0), 0.0) AS ndcg,
           CASE WHEN i.category = 'dataset' THEN coalesce(w.dcg / nullif(i.idcg_fixed, 0), 1.0)
                ELSE coalesce((w.dcg + coalesce(mv.delta, 0.0)) / nullif(i.idcg, 0), 0.0) END AS fixed
    FROM idcg i JOIN now w USING (case_id) LEFT JOIN moved mv USING (case_id, category)
)
SELECT category, sum(least(fixed, 1.0) - ndcg) AS lost, count(*) AS cases FROM scored GROUP BY category
"""


def _mean(con: duckdb.DuckDBPyConnection, ctx: EvalContext) -> tuple[int, float]:
    """(cases, summed nDCG@k) of the run over answerable cases with a relevant label: the engine's nDCG@k read from
    the positions of labelled units alone (only they carry gain; ``facts.LABELLED_TABLE``, kept by
    ``facts.fact_chunks`` on ``con``), without cutting every list to k (at a deep k that pass costs more
    than all of this)."""
    measure = Measure("nDCG", cutoff=ctx.depth).resolve(ctx.threshold, ctx.gain)
    judged = f"(SELECT case_id, unit_id, final_rank AS pos FROM {LABELLED_TABLE})"
    values = evaluate(con, ctx, [measure], trec=False, labelled=judged).column("m0")
    return int(pc.count(values).as_py()), float(pc.sum(values).as_py() or 0.0)


class CostTally:
    """The category costs of one run at one k, summed over the classifier's facts as they come, a chunk of cases
    at a time (``facts.fact_chunks``): every cost is a sum over failing cases, so no chunk needs another.

    ``con`` is the cursor ``fact_chunks`` reads on: the run's mean is read at the first chunk from the judged
    positions it keeps there (temp tables are the cursor's own)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: str, k: int) -> None:
        self._con, self._run_id, self._k = con, run_id, k
        with only_labels():  # stored under the store's own settings, whatever a command's --cases/--threshold
            self._ctx = resolve(con, run_id, [k])
        self._lost: dict[str, tuple[float, int]] = {}
        self._mean: tuple[int, float] | None = None

    def mean(self) -> tuple[int, float]:
        """(cases, summed nDCG@k) of the run's mean, read once (inside ``facts.kept_tables`` on ``con``)."""
        if self._mean is None:
            self._mean = _mean(self._con, self._ctx)
        return self._mean

    def resume(self, mean: tuple[int, float], lost: dict[str, tuple[float, int]]) -> None:
        """Start from a mean and losses read before (a classification resumed in another process)."""
        self._mean = mean
        for category, (value, cases) in lost.items():
            before = self._lost.get(category, (0.0, 0))
            self._lost[category] = (before[0] + value, before[1] + cases)

    def add(self, facts: pa.Table) -> dict[str, tuple[float, int]]:
        """Count the loss of the failing cases in ``facts`` (``facts`` rows: case_id, failure, n_relevant,
        top_units, missing; a case's rows all in this table); returns this chunk's own (loss, cases) per category."""
        self.mean()
        cur = self._con.cursor()
        try:
            cur.register("_cost_facts", facts.select(["case_id", "failure", "n_relevant", "top_units", "missing"]))
            sql = _cost_sql(self._ctx.gain_sql("q.grade"), self._k)
            rows = cur.sql(sql, params={"threshold": self._ctx.threshold}).fetchall()
        finally:
            cur.close()
        chunk = {str(category): (float(lost), int(cases)) for category, lost, cases in rows}
        self.resume(self.mean(), chunk)
        return chunk

    def report(self) -> CostReport:
        """The costs of everything added, on the run's mean nDCG@k."""
        if self._mean is None:  # fact_chunks always yields a chunk, so only a misuse gets here
            raise RuntimeError("CostTally.report before any chunk was added: the run's mean is read with the first")
        population, total = self._mean
        mean_value = total / population if population else None
        lost = {c: self._lost.get(c, (0.0, 0)) for c in COST_CATEGORIES}
        costs = tuple(
            CategoryCost(c, lost[c][0] / population if population else 0.0, lost[c][1]) for c in COST_CATEGORIES
        )
        return CostReport(self._run_id, f"nDCG@{self._k}", self._k, mean_value, population, _ordered(costs))
