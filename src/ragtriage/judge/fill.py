"""Judged labels as a new dataset version, never as people's labels, and only after a calibration that passed.

The new version (``annotate.versions.fork_with_labels``, whose rule says which parent labels it keeps) adds one
label per judged pair whose answer parsed: annotator ``judge:<model>``, the parsed grade, and a note naming the
prompt's SHA-256, the temperature and the answer's key in ``judge_answers`` (where the raw answer is). The pairs are
the fill's and the calibration's, so ``agreement`` compares the judge with the people on the calibration units.

The store's ``qrels`` stay the people's (``store.schema.QRELS_LIVE`` leaves ``judge:`` annotators out): figures
change only where a command is asked ``--labels with-judge``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb

from ragtriage.annotate.versions import fork_with_labels, scalar
from ragtriage.contract.staging import sql_str
from ragtriage.judge.answers import JudgeIdentity, has_tables
from ragtriage.store.connection import current_dataset_version
from ragtriage.store.transactions import transaction


class NotCalibrated(ValueError):
    """Filling refused: no calibration of this judge, or one below ``--min-kappa``."""


class NoJudgeLabels(ValueError):
    """Filling refused: no pair has a parsed answer, so a new version would be its parent under a new name."""


@dataclass(frozen=True)
class FillReport:
    version: str
    parent: str
    unchanged: bool
    labels: int  # judge labels in the new version from this fill and its calibration
    filled: int  # of them, on units no person labelled (what --labels with-judge adds)


def latest_calibration(con: duckdb.DuckDBPyConnection, judge: JudgeIdentity) -> tuple[int, dict[str, object]] | None:
    """The newest finished calibration of this judge (model, prompt, temperature, seed) on the current version or
    one of its ancestors: (session id, report)."""
    if not has_tables(con):
        return None
    rows = con.execute(
        """WITH RECURSIVE lineage AS (
               SELECT dataset_version, parent_version FROM datasets WHERE dataset_version = ?
               UNION SELECT d.dataset_version, d.parent_version FROM datasets d
                     JOIN lineage l ON d.dataset_version = l.parent_version)
           SELECT session_id, report FROM judge_sessions
           WHERE purpose = 'calibrate' AND status = 'done' AND model = ? AND prompt_sha256 = ? AND temperature = ?
             AND seed IS NOT DISTINCT FROM ? AND dataset_version IN (SELECT dataset_version FROM lineage)
           ORDER BY session_id DESC LIMIT 1""",
        [current_dataset_version(con), judge.model, judge.prompt_sha256, judge.temperature, judge.seed],
    ).fetchall()
    if not rows:
        return None
    return int(rows[0][0]), json.loads(rows[0][1])


def check_calibration(
    con: duckdb.DuckDBPyConnection, judge: JudgeIdentity, min_kappa: float, *, force: bool
) -> tuple[int | None, str]:
    """The calibration session the fill rests on and a sentence about it; raises :class:`NotCalibrated` when there
    is none, or its quadratic-weighted kappa (or its lower bound) is below ``min_kappa``, unless ``force``."""
    found = latest_calibration(con, judge)
    if found is None:
        msg = (
            f"no calibration of judge:{judge.model} with this prompt ({judge.prompt_sha256[:12]}) and temperature "
            f"{judge.temperature:g}: run `ragtriage judge --calibrate 200` with the same --model/--prompt first"
        )
        if not force:
            raise NotCalibrated(msg + ", or pass --force to fill without one")
        return None, msg + " (filling anyway: --force)"
    session, report = found
    kq = report.get("kappa_quadratic")
    value = kq.get("value") if isinstance(kq, dict) else None
    said = "n/a" if value is None else f"{float(value):.3f}"
    if value is None or float(value) < min_kappa:
        msg = f"calibration {session}: quadratic-weighted kappa {said} is below --min-kappa {min_kappa:g}"
        if not force:
            raise NotCalibrated(msg + "; improve the prompt or the model and calibrate again, or pass --force")
        return session, msg + " (filling anyway: --force)"
    return session, f"calibration {session}: quadratic-weighted kappa {said} >= --min-kappa {min_kappa:g}"


def fill_version(con: duckdb.DuckDBPyConnection, judge: JudgeIdentity, sessions: list[int]) -> FillReport:
    """Fork the current version with the parsed answers of ``sessions``' pairs as ``judge:<model>`` labels, in one
    transaction."""
    annotator = judge.annotator
    note = f"'judge prompt sha256:{judge.prompt_sha256} temperature {judge.temperature:g} answer ' || a.key"
    with transaction(con):
        parent = current_dataset_version(con)
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE _judge_new AS
                SELECT *, (SELECT coalesce(max(line), 0) FROM all_labels) + row_number() OVER (
                    ORDER BY case_id, unit_id) AS line
                FROM (SELECT DISTINCT ON (p.case_id, p.unit_id) p.case_id, p.document_id, p.chunk_id, p.section_id,
                             p.unit_id, a.grade, {sql_str(annotator)} AS annotator, {note} AS note
                      FROM judge_pairs p JOIN judge_answers a USING (key)
                      WHERE list_contains(?, p.session_id) AND a.grade IS NOT NULL
                      ORDER BY p.case_id, p.unit_id, p.session_id DESC)""",
            [sessions],
        )
        labels = int(scalar(con, "SELECT count(*) FROM _judge_new"))
        if labels == 0:
            raise NoJudgeLabels(
                f"no judged pair has an answer that parsed, so no dataset version is written ({parent} stays "
                "current): judge_answers.problem says why each did not parse; change the prompt or the model"
            )
        filled = int(
            scalar(
                con,
                "SELECT count(*) FROM _judge_new n WHERE NOT EXISTS "
                "(SELECT 1 FROM qrels q WHERE q.case_id = n.case_id AND q.unit_id = n.unit_id)",
            )
        )
        fork = fork_with_labels(con, parent, "_judge_new")
        con.execute(
            "UPDATE judge_sessions SET new_version = ? WHERE list_contains(?, session_id) AND purpose = 'fill'",
            [fork.version, sessions],
        )
    return FillReport(fork.version, parent, fork.unchanged, labels, filled)
