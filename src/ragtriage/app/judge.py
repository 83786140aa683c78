"""The judge use case: a session of LLM relevance labels, planned (cache, cost), asked, and reported (calibration
against the people's labels, or what the filled labels change), over ``ragtriage.judge``. The CLI parses the
options, calls :func:`run_judge` and prints the report it returns; the messages go to the caller's ``note``."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ragtriage.app.render import Output

if TYPE_CHECKING:
    import pyarrow as pa

    from ragtriage.judge import Endpoint, Plan, Prompt, Scale, Tally

#: exit status of a session some of whose pairs got no answer: incomplete, not bad input (that is 2)
EXIT_UNANSWERED = 1


class Unanswered(Exception):
    """Pairs got no answer (their requests failed): the session is left interrupted, nothing is reported."""


def plan_fresh(table: pa.Table, ep: Endpoint, prompt: Prompt, scale: Scale) -> Plan:
    """The plan on a store without the judge's tables (a --dry-run on a read-only store): nothing is cached."""
    from ragtriage.judge import plan
    from ragtriage.judge.answers import ensure_tables

    mem = duckdb.connect()
    try:
        ensure_tables(mem)
        return plan(mem, table, ep, prompt, scale)
    finally:
        mem.close()


def resumed_session(con: duckdb.DuckDBPyConnection, purpose: str) -> dict[str, Any]:
    """The latest interrupted (or still running) session of ``purpose``; ValueError when there is none."""
    from ragtriage.judge.answers import has_tables

    rows = (
        con.execute(
            """SELECT session_id, settings, prompt_path, prompt_sha256, model FROM judge_sessions
               WHERE purpose = ? AND status IN ('interrupted', 'running') ORDER BY session_id DESC LIMIT 1""",
            [purpose],
        ).fetchall()
        if has_tables(con)
        else []
    )
    if not rows:
        raise ValueError(f"no interrupted {purpose} session to resume; run without --resume")
    sid, settings, path, sha, model = rows[0]
    return {"id": int(sid), "settings": json.loads(settings), "prompt_path": path, "prompt_sha256": sha, "model": model}


def run_judge(
    con: duckdb.DuckDBPyConnection,
    ep: Endpoint,
    prompt_file: Path | None,
    settings: dict[str, Any],
    resume: bool,
    dry_run: bool,
    min_kappa: float,
    force: bool,
    max_requests: int | None,
    price_in: float | None,
    price_out: float | None,
    k: int,
    note: Callable[[str], None],
) -> Output | None:
    """Plan, ask and report one judge session (``settings``: a calibration's ``n`` or a fill's pairs); the report
    is returned to print, every message goes to ``note``. Raises :class:`Unanswered` when pairs got no answer."""
    from ragtriage.annotate.pool import rubric_text
    from ragtriage.annotate.versions import dataset_row
    from ragtriage.judge import Scale, check_calibration, load_prompt, plan
    from ragtriage.judge.session import identity
    from ragtriage.store.connection import current_dataset_version

    purpose = "calibrate" if "n" in settings else "fill"
    session = resumed_session(con, purpose) if resume else None
    if session is not None:
        if session["model"] != ep.model:
            raise ValueError(
                f"session {session['id']} asked judge:{session['model']}, not judge:{ep.model}: "
                "resume it with the same --model, or start a new session without --resume"
            )
        settings = session["settings"]
        prompt_file = Path(session["prompt_path"])
    prompt = load_prompt(prompt_file)
    if session is not None and prompt.sha256 != session["prompt_sha256"]:
        raise ValueError(f"{prompt.path} changed since session {session['id']}: start a new session without --resume")
    ds = dataset_row(con, current_dataset_version(con))
    scale = Scale(ds.grade_min, ds.grade_max, rubric_text(ds.rubric) or "(no rubric in dataset.json)")
    calibration_session = None
    if purpose == "fill":
        calibration_session, said = check_calibration(con, identity(ep, prompt, scale), min_kappa, force=force)
        note(said)
    table = _pairs(con, settings)
    planned = plan(con, table, ep, prompt, scale) if _has_answers(con) else plan_fresh(table, ep, prompt, scale)
    _print_plan(planned, ep, prompt, max_requests, price_in, price_out, note)
    if dry_run:
        return None
    if max_requests is not None and planned.to_ask > max_requests:
        note(
            f"the budget (--max-requests {max_requests}) covers fewer pairs than the {planned.to_ask} to ask: "
            "what it covers is asked and kept; --resume continues"
        )
    tally = _ask(con, purpose, ep, prompt, scale, planned, settings, session, max_requests, note)
    if tally.interrupted or tally.budget_spent:
        return None
    if tally.tally.failed:
        raise Unanswered(
            f"{tally.tally.failed} pair(s) have no answer: session {tally.session} is left interrupted, "
            + ("no calibration is reported" if purpose == "calibrate" else "no dataset version is written")
            + f"; `ragtriage judge ... --resume` asks only them (exit {EXIT_UNANSWERED})"
        )
    if purpose == "calibrate":
        return _report_calibration(
            con,
            tally.session,
            planned.pairs,
            ds.grade_min,
            ds.grade_max,
            ds.relevance_threshold,
            settings,
            ep,
            prompt,
        )
    sessions = [tally.session] + ([calibration_session] if calibration_session is not None else [])
    return _report_fill(con, ep, prompt, scale, sessions, planned.pairs, k)


def _has_answers(con: duckdb.DuckDBPyConnection) -> bool:
    from ragtriage.judge.answers import has_tables

    return has_tables(con)


def _pairs(con: duckdb.DuckDBPyConnection, settings: dict[str, Any]) -> pa.Table:
    from ragtriage.judge import calibration_pairs, file_pairs, pool_pairs

    if "n" in settings:
        return calibration_pairs(con, int(settings["n"]), int(settings["sample_seed"]))
    if settings.get("pairs"):
        return file_pairs(con, settings["pairs"])
    return pool_pairs(con, list(settings["runs"]), int(settings["depth"]), str(settings["stage"]))


def _print_plan(
    planned: Plan,
    ep: Endpoint,
    prompt: Prompt,
    budget: int | None,
    price_in: float | None,
    price_out: float | None,
    note: Callable[[str], None],
) -> None:
    cost = planned.cost(price_in, price_out)
    note(
        f"judge:{ep.model} at {ep.shown()}, prompt {prompt.path} (sha256 {prompt.sha256[:12]}), temperature "
        f"{ep.temperature:g}" + (f", seed {ep.seed}" if ep.seed is not None else ", no seed")
    )
    note(
        f"{planned.pairs.num_rows + planned.no_text} pair(s): {planned.cached} answered before (cache), "
        f"{planned.to_ask} to ask, {planned.no_text} without text (not sent)"
    )
    note(
        f"estimate: {planned.to_ask} request(s) (at most {planned.max_requests} with {planned.retries} retries each"
        + (f"; budget {budget}" if budget is not None else "")
        + f"), about {planned.prompt_tokens} prompt token(s) (text length / 4) and at most "
        f"{planned.completion_tokens} answer token(s)"
        + (f", about {cost:.4f} at the given prices" if cost is not None else "")
    )


def _progress(note: Callable[[str], None]) -> Callable[[Tally], None]:
    """A line on standard error at every tenth of the pairs to ask (a long session says it is moving)."""
    shown = [0]

    def told(t: Tally) -> None:
        done = t.answered + t.failed
        step = t.to_ask // 10 or 1
        if t.to_ask >= 20 and done // step > shown[0]:
            shown[0] = done // step
            note(f"  {done} of {t.to_ask} asked ({t.unparsed} unparsed, {t.failed} failed)")

    return told


class _Asked:
    """A finished, interrupted or budget-stopped asking, with its session id."""

    def __init__(self, tally: Tally, session: int) -> None:
        self.tally = tally
        self.session = session
        self.interrupted = tally.interrupted
        self.budget_spent = tally.budget_spent


def _ask(
    con: duckdb.DuckDBPyConnection,
    purpose: str,
    ep: Endpoint,
    prompt: Prompt,
    scale: Scale,
    planned: Plan,
    settings: dict[str, Any],
    resumed: dict[str, Any] | None,
    budget: int | None,
    note: Callable[[str], None],
) -> _Asked:
    from ragtriage.judge import ask
    from ragtriage.judge.session import end_session, start_session
    from ragtriage.store.connection import current_dataset_version

    if resumed is not None:
        session = int(resumed["id"])
    else:
        session = start_session(con, purpose, ep, prompt, current_dataset_version(con), settings, planned.pairs)
    try:
        tally = ask(con, planned, ep, prompt, scale, budget=budget, progress=_progress(note))
    except Exception:
        with suppress(Exception):  # the store's own failure may refuse this too; the error raised stays the cause
            end_session(con, session, "interrupted")
        raise
    stopped = tally.interrupted or tally.budget_spent
    end_session(con, session, "interrupted" if stopped or tally.failed else "running")
    note(
        f"asked {tally.to_ask} pair(s) in {tally.requests} request(s): {tally.answered} answered "
        f"({tally.unparsed} did not parse: kept, counted, never guessed), {tally.failed} failed"
    )
    for f in tally.failures:
        note(f"  failed: {f}")
    if stopped:
        why = "interrupted" if tally.interrupted else "the request budget is spent"
        note(f"{why}: every answer received is stored; `ragtriage judge ... --resume` continues session {session}")
    return _Asked(tally, session)


def _report_calibration(
    con: duckdb.DuckDBPyConnection,
    session: int,
    pairs: pa.Table,
    grade_min: int,
    grade_max: int,
    threshold: int,
    settings: dict[str, Any],
    ep: Endpoint,
    prompt: Prompt,
) -> Output:
    from ragtriage.judge import answers_of, calibration
    from ragtriage.judge.calibrate import confusion_rows, figure_rows, grade_rows
    from ragtriage.judge.session import end_session, unparsed

    answered = answers_of(con, pairs)
    cal = calibration(answered, tuple(range(grade_min, grade_max + 1)), threshold, seed=int(settings["sample_seed"]))
    end_session(con, session, "done", cal.to_json())
    context = {
        "judge": f"judge:{ep.model}",
        "prompt sha256": prompt.sha256,
        "calibration session": session,
        "pairs": cal.pairs,
        "graded": cal.graded,
        "unparsed": cal.unparsed,
        "unanswered": cal.unanswered,
        "sample": f"stratified by grade, seed {cal.seed}",
    }
    notes = [
        "Figures over the pairs whose answer parsed; ci_low/ci_high: seeded 95% bootstrap over pairs (1000 resamples).",
        "The sample is balanced across grades, so agreement there is a stricter test than on the natural mix.",
        "--fill checks the quadratic-weighted kappa against --min-kappa.",
    ]
    return Output(
        figure_rows(cal),
        context,
        notes,
        sections={
            "confusion matrix (rows: people, columns: judge)": confusion_rows(cal),
            "per grade": grade_rows(cal),
            "answers that did not parse": unparsed(answered),
        },
        title="judge calibration against people's labels",
    )


def _report_fill(
    con: duckdb.DuckDBPyConnection,
    ep: Endpoint,
    prompt: Prompt,
    scale: Scale,
    sessions: list[int],
    pairs: pa.Table,
    k: int,
) -> Output:
    from ragtriage.classify import refresh
    from ragtriage.judge import answers_of, fill_version, measure_changes, ranking_agreement
    from ragtriage.judge.session import end_session, identity, unparsed

    try:
        rep = fill_version(con, identity(ep, prompt, scale), sessions)
    finally:
        end_session(con, sessions[0], "done")  # every pair asked; new_version stays NULL when nothing was written
    refresh(con)  # a new dataset version: every run's stored classification is for the old one
    changes = measure_changes(con, k=k)
    context = {
        "dataset version": rep.version + (" (already present, now current)" if rep.unchanged else ""),
        "parent": rep.parent,
        "judge": f"judge:{ep.model}",
        "prompt sha256": prompt.sha256,
        "judge labels": rep.labels,
        "filled units (no person's label)": rep.filled,
        "k": k,
    }
    notes = [
        "human: the people's labels only (every command's default); with_judge: --labels with-judge, where a "
        "judge's grade fills a unit no person labelled. People's labels are unchanged.",
        "kendall_tau: Kendall's tau-b between the runs' order under both (scipy.stats.kendalltau).",
    ]
    return Output(
        changes,
        context,
        notes,
        sections={
            "system ranking": ranking_agreement(changes),
            "answers that did not parse": unparsed(answers_of(con, pairs)),
        },
        title="what the judge's labels change",
    )
