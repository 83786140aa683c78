"""Why did a case regress? Each (case, measure) whose value dropped against the baseline gets exactly one cause,
with the facts it rests on; a case that did not drop gets none.

The facts are about the relevant units of the baseline's top k (relevant: ``contract.relevance`` at the measure's
threshold, over the labels the figures used) that the candidate ranks lower or not at all, the *demoted* units,
and about the units the candidate now ranks above each of them that the baseline did not, its *overtakers*. The
first cause that holds, in this order, is the case's (docs/experiments.md states it for users):

1. ``label-change``: the two figures were computed on different dataset versions and the case's graded labels
   differ between them (a unit added, removed or regraded).
2. ``tie-order``: every demoted unit is still in the candidate's list and each of its overtakers has its score:
   the order among equal scores is arbitrary (jitter, not quality).
3. ``candidate-miss``: a demoted unit is absent from the candidate's retrieval list (its candidate stage; its
   only list in a one-stage run): the retriever lost it.
4. ``unjudged-displacement``: every demoted unit is still in the candidate's final list and every overtaker is a
   unit with no label for the case that no list of the baseline holds (a pool drawn from the baseline could not
   have judged it): the drop may be an artefact of missing labels (pool and judge them).
5. ``rerank-inversion``: a two-stage candidate holds a demoted unit in its candidate stage and its final stage
   ranks it lower than the baseline did (below k, or lower within it).
6. ``other``: none of these holds; the evidence lists the facts (a drop from units below the threshold that carry
   gain, or from relevant units the baseline ranked below k, has no demoted unit).

A unit is what the store's ``unit_id`` is (document or chunk, whatever the dataset's unit); lists are the
de-duplicated ones the measures read (``store.dedup``). Everything is one DuckDB query over the dropped cases'
rows only; the baseline's positions are numbered within its top k alone (a unit at position p has a recorded
rank of at least p, so its rows ranked within k hold every position within k).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragtriage.contract.relevance import is_relevant
from ragtriage.contract.staging import sql_str
from ragtriage.experiments.runs_table import RunsComparison
from ragtriage.gate.compare import TIE, Comparison
from ragtriage.metrics.context import context_of
from ragtriage.metrics.measures import parse_measure
from ragtriage.store.dedup import deduplicated
from ragtriage.store.schema import qrels_over

CAUSES = ("label-change", "tie-order", "candidate-miss", "unjudged-displacement", "rerank-inversion", "other")
#: Units listed in a row's evidence (the count is always whole).
EVIDENCE_UNITS = 10
#: What "no cutoff" (AP, RR over the whole list) is compared as.
WHOLE_LIST = 2_147_483_647
ADVICE = "pool and judge the unlabelled units (ragtriage pool, ragtriage judge) before reading this drop"

EXPLAINED_SCHEMA = pa.schema(
    [
        ("case_id", pa.string()),
        ("measure", pa.string()),
        ("delta", pa.float64()),
        ("cause", pa.string()),
        ("why", pa.string()),
        ("evidence", pa.string()),  # JSON text
    ]
)
COUNTS_SCHEMA = pa.schema([("measure", pa.string()), ("cause", pa.string()), ("cases", pa.int64())])


@dataclass(frozen=True)
class Explanation:
    """``explained``: one row per dropped (case, measure) (:data:`EXPLAINED_SCHEMA`, ``evidence`` JSON text);
    ``counts``: cases per (measure, cause), every cause of :data:`CAUSES` for every measure asked."""

    run_id: str
    baseline: str
    versions: tuple[str, str]  # the dataset versions of the candidate's and the baseline's figures
    explained: pa.Table
    counts: pa.Table


def explain(
    con: duckdb.DuckDBPyConnection, comparison: Comparison, *, versions: tuple[str, str] | None = None
) -> Explanation:
    """The cause of every drop of a ``compare`` result, over the cases, measures and k it resolved."""
    drops = comparison.pairs.select(["case_id", "metric", "diff"]).rename_columns(["case_id", "measure", "delta"])
    measures = list(dict.fromkeys(str(m) for m in comparison.summary.column("metric").to_pylist()))
    version = comparison.dataset_version
    return explain_drops(con, comparison.run_id, comparison.baseline, drops, measures, versions or (version, version))


def _measures_table(con: duckdb.DuckDBPyConnection, run_id: str, measures: Sequence[str]) -> pa.Table:
    """measure, its order, k (:data:`WHOLE_LIST` for none), the k shown, and the relevance threshold it reads."""
    threshold = context_of(con, run_id).threshold
    parsed = [parse_measure(m) for m in measures]
    return pa.table(
        {
            "measure": pa.array(list(measures), pa.string()),
            "measure_order": pa.array(range(len(parsed)), pa.int64()),
            "k": pa.array([m.cutoff or WHOLE_LIST for m in parsed], pa.int64()),
            "k_shown": pa.array([m.cutoff for m in parsed], pa.int64()),
            "rel": pa.array([threshold if m.rel is None else m.rel for m in parsed], pa.int64()),
        }
    )


def _label_changes_sql(versions: tuple[str, str]) -> str:
    """(case_id, n_changed, changed) of the dropped cases whose graded labels differ between the two versions."""
    cand, base = versions
    if cand == base:
        return "SELECT NULL::VARCHAR AS case_id, 0 AS n_changed, NULL AS changed WHERE false"

    def graded(version: str) -> str:
        rows = f"""(SELECT * FROM all_labels
                    WHERE dataset_version = {sql_str(version)} AND case_id IN (SELECT case_id FROM cs))"""
        return f"(SELECT case_id, unit_id, grade FROM ({qrels_over(rows)}))"

    return f"""SELECT case_id, count(*) AS n_changed,
                      list(struct_pack(unit := unit_id, baseline_grade := gb, candidate_grade := gc)
                           ORDER BY unit_id)[1:{EVIDENCE_UNITS}] AS changed
               FROM (SELECT case_id, unit_id, c.grade AS gc, b.grade AS gb
                     FROM {graded(cand)} c FULL JOIN {graded(base)} b USING (case_id, unit_id))
               WHERE gc IS DISTINCT FROM gb GROUP BY case_id"""


def _explain_sql(qrels: str, versions: tuple[str, str]) -> str:
    rel = is_relevant("q.grade", "ck.rel")
    return f"""
    WITH d AS (SELECT case_id, measure, min(delta) AS delta FROM _drops WHERE delta < -$tie GROUP BY ALL),
    dm AS (SELECT * FROM d JOIN _measures USING (measure)),
    cs AS (SELECT DISTINCT case_id FROM d),
    ck AS (SELECT DISTINCT case_id, k, rel FROM dm),
    q AS (SELECT case_id, unit_id, grade FROM {qrels} WHERE case_id IN (SELECT case_id FROM cs)),
    lists AS (SELECT run_id, stage, case_id, unit_id, rank, score FROM results
              WHERE run_id IN ($cand, $base) AND case_id IN (SELECT case_id FROM cs)),
    ranked AS (SELECT * FROM lists
               WHERE run_id = $cand OR (stage = 'final' AND rank <= (SELECT max(k) FROM _measures))),
    pos AS ({deduplicated("SELECT * FROM ranked", lists="run_id, stage, case_id")}),
    bl AS (SELECT case_id, unit_id, pos, score FROM pos WHERE run_id = $base AND stage = 'final'),
    cf AS (SELECT case_id, unit_id, pos, score FROM pos WHERE run_id = $cand AND stage = 'final'),
    cc AS (SELECT case_id, unit_id, pos FROM pos WHERE run_id = $cand AND stage = 'candidate'),
    ball AS (SELECT DISTINCT case_id, unit_id FROM lists WHERE run_id = $base),
    dem AS (SELECT ck.case_id, ck.k, ck.rel, b.unit_id, b.pos AS pos_b, f.pos AS pos_c, f.score AS score_c,
                   c.pos AS pos_cs
            FROM ck JOIN bl b USING (case_id) JOIN q USING (case_id, unit_id)
            LEFT JOIN cf f USING (case_id, unit_id) LEFT JOIN cc c USING (case_id, unit_id)
            WHERE b.pos <= ck.k AND {rel} AND (f.pos IS NULL OR f.pos > b.pos)),
    ovr AS (SELECT dem.case_id, dem.k, dem.rel, dem.unit_id, u.unit_id AS over_id,
                   coalesce(u.score = dem.score_c, false) AS tied,
                   uq.unit_id IS NULL AND ua.unit_id IS NULL AS unjudged_new
            FROM dem JOIN cf u ON u.case_id = dem.case_id AND u.pos < dem.pos_c
            LEFT JOIN bl ub ON ub.case_id = u.case_id AND ub.unit_id = u.unit_id
            LEFT JOIN ball ua ON ua.case_id = u.case_id AND ua.unit_id = u.unit_id
            LEFT JOIN q uq ON uq.case_id = u.case_id AND uq.unit_id = u.unit_id
            WHERE NOT coalesce(ub.pos < dem.pos_b, false)),
    ov AS (SELECT case_id, k, rel, unit_id, count(*) AS n_over, count(*) FILTER (WHERE tied) AS n_tied,
                  count(*) FILTER (WHERE unjudged_new) AS n_unjudged_new
           FROM ovr GROUP BY ALL),
    unj AS (SELECT case_id, k, rel, list_sort(list(DISTINCT over_id))[1:{EVIDENCE_UNITS}] AS unjudged_units,
                   count(DISTINCT over_id) AS n_unjudged_units
            FROM ovr WHERE unjudged_new GROUP BY ALL),
    du AS (SELECT dem.*, coalesce(n_over, 0) AS n_over, coalesce(n_tied, 0) AS n_tied,
                  coalesce(n_unjudged_new, 0) AS n_unjudged_new,
                  CASE WHEN $two_stage THEN pos_cs IS NULL ELSE pos_c IS NULL END AS missing
           FROM dem LEFT JOIN ov USING (case_id, k, rel, unit_id)),
    per AS (SELECT case_id, k, rel, count(*) AS n_demoted,
                   bool_and(pos_c IS NOT NULL AND score_c IS NOT NULL AND n_over > 0 AND n_tied = n_over) AS tied,
                   count(*) FILTER (WHERE missing) AS n_missing,
                   bool_and(pos_c IS NOT NULL AND n_over > 0 AND n_unjudged_new = n_over) AS unjudged,
                   count(*) FILTER (WHERE pos_c IS NULL) AS n_absent_final,
                   count(*) FILTER (WHERE pos_cs IS NOT NULL) AS n_in_candidate_stage,
                   sum(n_unjudged_new) AS n_unjudged_above,
                   list(struct_pack(unit := unit_id, baseline_pos := pos_b,
                                    candidate_pos := pos_c, candidate_stage_pos := pos_cs,
                                    missing_from_retrieval := missing, overtaken_by := n_over,
                                    overtakers_tied := n_tied, overtakers_unjudged_new := n_unjudged_new)
                        ORDER BY pos_b)[1:{EVIDENCE_UNITS}] AS units,
                   string_agg(unit_id, ', ' ORDER BY pos_b) FILTER (WHERE missing) AS missing_ids
            FROM du GROUP BY ALL),
    lc AS ({_label_changes_sql(versions)}),
    caused AS (
        SELECT dm.*, per.* EXCLUDE (case_id, k, rel), lc.n_changed, lc.changed, unj.unjudged_units,
               unj.n_unjudged_units,
               CASE WHEN lc.case_id IS NOT NULL THEN 'label-change'
                    WHEN per.tied THEN 'tie-order'
                    WHEN per.n_missing > 0 THEN 'candidate-miss'
                    WHEN per.unjudged THEN 'unjudged-displacement'
                    WHEN $two_stage AND per.n_in_candidate_stage > 0 THEN 'rerank-inversion'
                    ELSE 'other' END AS cause
        FROM dm LEFT JOIN per USING (case_id, k, rel) LEFT JOIN lc USING (case_id)
        LEFT JOIN unj USING (case_id, k, rel))
    SELECT case_id, measure, delta, cause,
           CASE cause
             WHEN 'label-change' THEN format('{{}} graded label(s) differ between dataset versions {{}} and {{}}',
                                             n_changed, left($cand_version, 12), left($base_version, 12))
             WHEN 'tie-order' THEN format('{{}} relevant unit(s) moved down only past units at their own score',
                                          n_demoted)
             WHEN 'candidate-miss' THEN format('{{}} relevant unit(s) of the baseline''s top {{}} not in the '
                                               || '{{}}: {{}}', n_missing, coalesce(k_shown::VARCHAR, 'list'),
                                               $retrieval, missing_ids)
             WHEN 'unjudged-displacement' THEN format('{{}} unlabelled unit(s) the baseline never returned rank above '
                                                      || '{{}} relevant unit(s): {{}}', n_unjudged_units, n_demoted,
                                                      array_to_string(unjudged_units, ', '))
             WHEN 'rerank-inversion' THEN format('{{}} relevant unit(s) in the candidate stage ranked lower by the '
                                                 || 'final stage ({{}} left out of its list)', n_in_candidate_stage,
                                                 n_absent_final)
             ELSE CASE WHEN n_demoted IS NULL
                       THEN format('no relevant unit of the baseline''s top {{}} is ranked lower',
                                   coalesce(k_shown::VARCHAR, 'list'))
                       ELSE format('{{}} relevant unit(s) of the baseline''s top {{}} ranked lower, past units the '
                                   || 'baseline returned or that carry a label', n_demoted,
                                   coalesce(k_shown::VARCHAR, 'list')) END
           END AS why,
           to_json(struct_pack(
               k := k_shown, relevance_threshold := rel,
               labels := $labels, baseline_list := $base_list, candidate_lists := $cand_lists,
               retrieval_list := $retrieval,
               demoted_relevant := coalesce(n_demoted, 0), missing_from_retrieval := coalesce(n_missing, 0),
               absent_from_final := coalesce(n_absent_final, 0),
               unjudged_new_above := coalesce(n_unjudged_above, 0), units := units,
               unjudged_units := unjudged_units,
               label_changes := coalesce(n_changed, 0), changed_labels := changed,
               dataset_versions := struct_pack(candidate := $cand_version, baseline := $base_version),
               advice := CASE WHEN cause = 'unjudged-displacement' THEN $advice END))::VARCHAR AS evidence
    FROM caused ORDER BY measure_order, delta, case_id
    """


def explain_drops(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    baseline: str,
    drops: pa.Table,
    measures: Sequence[str],
    versions: tuple[str, str],
) -> Explanation:
    """The cause of every row of ``drops`` (case_id, measure, delta: the candidate's value minus the baseline's)
    whose delta is below zero (beyond ``gate.compare.TIE``); ``measures`` are the names asked, in order (each
    gets a count of every cause, zero included); ``versions`` the dataset versions the candidate's and the
    baseline's figures were computed on (the same one for a ``compare`` over one version)."""
    ctx = context_of(con, run_id)
    qrels, qparams = ctx.qrels_sql()
    if qparams:
        raise ValueError("explain reads the whole labels relation; a case-cut context is not supported")
    asked = _measures_table(con, run_id, measures)
    cur = con.cursor()
    try:
        found = cur.execute(
            "SELECT EXISTS (SELECT 1 FROM results WHERE run_id = ? AND stage = 'candidate')", [run_id]
        ).fetchall()
        two_stage = bool(found[0][0])
        cur.register("_drops", drops.select(["case_id", "measure", "delta"]))
        cur.register("_measures", asked)
        retrieval = "candidate stage" if two_stage else "final list (one-stage run)"
        params = {
            "tie": TIE,
            "cand": run_id,
            "base": baseline,
            "two_stage": two_stage,
            "retrieval": retrieval,
            "labels": f"qrels of dataset version {versions[0][:12]} ({ctx.labels} labels)",
            "base_list": f"run {baseline}, final stage",
            "cand_lists": f"run {run_id}, final stage" + (" and candidate stage" if two_stage else ""),
            "cand_version": versions[0],
            "base_version": versions[1],
            "advice": ADVICE,
        }
        explained = cur.sql(_explain_sql(qrels, versions), params=params).to_arrow_table().cast(EXPLAINED_SCHEMA)
        cur.register("_explained", explained)
        counts = cur.sql(
            """SELECT m.measure, c.cause, count(e.case_id) AS cases
               FROM _measures m CROSS JOIN (SELECT unnest($causes::VARCHAR[]) AS cause,
                                                   generate_subscripts($causes::VARCHAR[], 1) AS cause_order) c
               LEFT JOIN _explained e ON e.measure = m.measure AND e.cause = c.cause
               GROUP BY m.measure, m.measure_order, c.cause, c.cause_order
               ORDER BY m.measure_order, c.cause_order""",
            params={"causes": list(CAUSES)},
        ).to_arrow_table()
    finally:
        cur.close()
    return Explanation(run_id, baseline, versions, explained, counts.cast(COUNTS_SCHEMA))


def explain_runs(con: duckdb.DuckDBPyConnection, rc: RunsComparison) -> tuple[pa.Table, pa.Table]:
    """(explained, counts) of every candidate of a ``compare --runs`` table against its baseline, each with a
    leading ``run_id`` column: the per-case values, measures and cases the table was computed from."""
    import pyarrow.compute as pc

    per_case = rc.per_case()
    version = rc.dataset_version
    explained, counts = [], []
    for run in rc.candidates:  # a few runs; each run's drops are one query
        drops = per_case.filter(pc.equal(per_case.column("run_id"), run))
        e = explain_drops(con, run, rc.baseline, drops, rc.measures, (version, version))
        explained.append(_with_run(e.explained, run))
        counts.append(_with_run(e.counts, run))
    return pa.concat_tables(explained), pa.concat_tables(counts)


def _with_run(table: pa.Table, run: str) -> pa.Table:
    return table.add_column(0, "run_id", pa.repeat(pa.scalar(run, pa.string()), table.num_rows))
