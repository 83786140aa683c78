"""`ragtriage judge`: LLM relevance labels for unjudged results, calibrated against the people's labels first."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, input_errors, show
from ragtriage.cli._app import fail as _fail
from ragtriage.cli._app import open_existing as _open
from ragtriage.output import Format, Output
from ragtriage.safe_text import visible

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ragtriage.judge import Endpoint, Plan, Prompt, Scale, Tally

err = Console(stderr=True, soft_wrap=True)
EXIT_UNANSWERED = 1  # requests failed: the session is incomplete, not the input bad (that is exit 2)


def _say(text: str) -> None:
    err.print(visible(text), markup=False, highlight=False)


def _runs(value: str | None) -> list[str]:
    return [r.strip() for r in (value or "").split(",") if r.strip()]


@app.command()
def judge(
    endpoint: Annotated[str, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.")],
    model: Annotated[str, typer.Option(help="Model name the endpoint serves; labels get annotator judge:MODEL.")],
    db: DbOpt = DEFAULT_DB_PATH,
    calibrate: Annotated[
        int | None, typer.Option("--calibrate", help="Grade N units people labelled (stratified by grade) and report.")
    ] = None,
    fill: Annotated[
        bool, typer.Option("--fill", help="Grade the unjudged pairs and store them as a new version.")
    ] = False,
    runs: Annotated[
        str | None, typer.Option("--runs", help="With --fill: pool these runs (as `ragtriage pool`).")
    ] = None,
    depth: Annotated[int, typer.Option(help="Pool depth for --runs (top DEPTH after de-duplication).")] = 10,
    stage: Annotated[str, typer.Option(help="Result stage to pool: final|candidate.")] = "final",
    pairs: Annotated[
        Path | None, typer.Option("--pairs", help="With --fill: a .csv/.jsonl of case_id,unit_id[,text] pairs.")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option("--api-key-env", help="Environment variable holding the API key (never stored).")
    ] = None,
    prompt_file: Annotated[
        Path | None, typer.Option("--prompt", help="Your own prompt file (default: the package's UMBRELA-style one).")
    ] = None,
    min_kappa: Annotated[
        float, typer.Option(help="--fill refuses when calibration's quadratic-weighted kappa is below this.")
    ] = 0.4,
    force: Annotated[bool, typer.Option("--force", help="--fill without a passing calibration.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and cost estimate; send nothing.")] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the last interrupted session of this kind.")
    ] = False,
    sample_seed: Annotated[int, typer.Option(help="Seed of the calibration sample and its bootstrap.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 4,
    timeout: Annotated[float, typer.Option(help="Seconds one attempt may take, the whole answer read.")] = 60.0,
    retries: Annotated[int, typer.Option(help="Retries of a 429/5xx/timeout/connection error (with backoff).")] = 4,
    backoff: Annotated[
        float, typer.Option(help="First backoff in seconds, doubled per retry, when the server sends no Retry-After.")
    ] = 1.0,
    max_requests: Annotated[
        int | None, typer.Option("--max-requests", help="Request budget (retries included); stop when spent.")
    ] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: deterministic).")] = 0.0,
    seed: Annotated[int, typer.Option(help="The API's seed parameter.")] = 0,
    no_seed: Annotated[bool, typer.Option("--no-seed", help="Do not send a seed (an API that refuses it).")] = False,
    max_tokens: Annotated[int, typer.Option(help="Answer length limit per request.")] = 64,
    price_in: Annotated[float | None, typer.Option(help="Price per million prompt tokens, for the estimate.")] = None,
    price_out: Annotated[float | None, typer.Option(help="Price per million answer tokens, for the estimate.")] = None,
    k: Annotated[int, typer.Option("--k", help="With --fill: the cutoff of the before/after measures.")] = 10,
    fmt: FormatOpt = Format.table,
) -> None:
    """Grade (query, unit text) pairs with an LLM judge: --calibrate N against people's labels, then --fill.

    Exit 0: every pair answered (or the budget or Ctrl-C stopped it: --resume continues). 1: some pairs got no
    answer (their requests failed), so no calibration is reported and no version written; --resume asks them. 2:
    unusable input.
    """
    from ragtriage.judge import Endpoint, JudgeError, NotCalibrated, PromptError
    from ragtriage.judge.client import api_key
    from ragtriage.judge.fill import NoJudgeLabels

    if (calibrate is None) == (not fill):
        raise _fail("give one of --calibrate N (agreement with people's labels) or --fill (store judged labels)")
    _check_args(calibrate, depth, min_kappa, concurrency, timeout, retries, backoff, max_requests,
                temperature, max_tokens, price_in, price_out, k)  # fmt: skip
    if fill and not resume and (runs is None) == (pairs is None):
        raise _fail("--fill needs the pairs: --runs a,b [--depth 10] (the pool) or --pairs FILE")
    try:
        ep = Endpoint(
            endpoint,
            model,
            api_key_env,
            temperature,
            None if no_seed else seed,
            max_tokens,
            timeout,
            retries,
            backoff_s=backoff,
            concurrency=concurrency,
        )
        api_key(ep)  # a variable not set is refused before the session is written
    except JudgeError as exc:
        raise _fail(exc) from exc
    settings: dict[str, Any] = (
        {"n": calibrate, "sample_seed": sample_seed}
        if calibrate is not None
        else {"runs": _runs(runs), "depth": depth, "stage": stage, "pairs": str(pairs) if pairs else None}
    )
    try:
        con = _open(db, read_only=dry_run)
        try:
            _judge(
                con,
                ep,
                prompt_file,
                settings,
                resume,
                dry_run,
                min_kappa,
                force,
                max_requests,
                price_in,
                price_out,
                k,
                fmt,
            )
        finally:
            con.close()
    except NoJudgeLabels as exc:
        _say(str(exc))
        raise typer.Exit(EXIT_UNANSWERED) from exc
    except (NotCalibrated, JudgeError, PromptError) as exc:
        raise _fail(exc) from exc
    except input_errors() as exc:
        raise _fail(exc) from exc


def _check_args(
    calibrate: int | None,
    depth: int,
    min_kappa: float,
    concurrency: int,
    timeout: float,
    retries: int,
    backoff: float,
    max_requests: int | None,
    temperature: float,
    max_tokens: int,
    price_in: float | None,
    price_out: float | None,
    k: int,
) -> None:
    """Every argument in its range before the store is opened (``cli.arg_checks``): refused, never clamped."""
    from ragtriage.cli import arg_checks as a

    for name, value in [("--calibrate", calibrate), ("--depth", depth), ("--concurrency", concurrency),
                        ("--max-requests", max_requests), ("--max-tokens", max_tokens), ("--k", k)]:  # fmt: skip
        a.at_least(name, value, 1)
    for name, low in [("--retries", retries), ("--backoff", backoff), ("--temperature", temperature)]:
        a.at_least(name, low, 0)
    a.at_least("--timeout", timeout, 0, strict=True)
    a.between("--min-kappa", min_kappa, -1.0, 1.0)
    a.at_least("--price-in", price_in, 0)
    a.at_least("--price-out", price_out, 0)


def _judge(
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
    fmt: Format,
) -> None:
    from ragtriage.annotate.pool import rubric_text
    from ragtriage.annotate.versions import dataset_row
    from ragtriage.judge import Scale, check_calibration, load_prompt, plan
    from ragtriage.judge.session import identity
    from ragtriage.store.connection import current_dataset_version

    purpose = "calibrate" if "n" in settings else "fill"
    session = _resumed(con, purpose) if resume else None
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
        _say(said)
    table = _pairs(con, settings)
    planned = plan(con, table, ep, prompt, scale) if _has_answers(con) else _plan_fresh(table, ep, prompt, scale)
    _print_plan(planned, ep, prompt, max_requests, price_in, price_out)
    if dry_run:
        return
    if max_requests is not None and planned.to_ask > max_requests:
        _say(
            f"the budget (--max-requests {max_requests}) covers fewer pairs than the {planned.to_ask} to ask: "
            "what it covers is asked and kept; --resume continues"
        )
    tally = _ask(con, purpose, ep, prompt, scale, planned, settings, session, max_requests)
    if tally.interrupted or tally.budget_spent:
        return
    if tally.tally.failed:
        _say(
            f"{tally.tally.failed} pair(s) have no answer: session {tally.session} is left interrupted, "
            + ("no calibration is reported" if purpose == "calibrate" else "no dataset version is written")
            + f"; `ragtriage judge ... --resume` asks only them (exit {EXIT_UNANSWERED})"
        )
        raise typer.Exit(EXIT_UNANSWERED)
    if purpose == "calibrate":
        _report_calibration(
            con,
            tally.session,
            planned.pairs,
            ds.grade_min,
            ds.grade_max,
            ds.relevance_threshold,
            settings,
            ep,
            prompt,
            fmt,
        )
    else:
        sessions = [tally.session] + ([calibration_session] if calibration_session is not None else [])
        _report_fill(con, ep, prompt, scale, sessions, planned.pairs, k, fmt)


def _has_answers(con: duckdb.DuckDBPyConnection) -> bool:
    from ragtriage.judge.answers import has_tables

    return has_tables(con)


def _plan_fresh(table: pa.Table, ep: Endpoint, prompt: Prompt, scale: Scale) -> Plan:
    """The plan on a store without the judge's tables (a --dry-run on a read-only store): nothing is cached."""
    import duckdb

    from ragtriage.judge import plan
    from ragtriage.judge.answers import ensure_tables

    mem = duckdb.connect()
    try:
        ensure_tables(mem)
        return plan(mem, table, ep, prompt, scale)
    finally:
        mem.close()


def _resumed(con: duckdb.DuckDBPyConnection, purpose: str) -> dict[str, Any]:
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


def _pairs(con: duckdb.DuckDBPyConnection, settings: dict[str, Any]) -> pa.Table:
    from ragtriage.judge import calibration_pairs, file_pairs, pool_pairs

    if "n" in settings:
        return calibration_pairs(con, int(settings["n"]), int(settings["sample_seed"]))
    if settings.get("pairs"):
        return file_pairs(con, settings["pairs"])
    return pool_pairs(con, list(settings["runs"]), int(settings["depth"]), str(settings["stage"]))


def _print_plan(
    planned: Plan, ep: Endpoint, prompt: Prompt, budget: int | None, price_in: float | None, price_out: float | None
) -> None:
    cost = planned.cost(price_in, price_out)
    _say(
        f"judge:{ep.model} at {ep.shown()}, prompt {prompt.path} (sha256 {prompt.sha256[:12]}), temperature "
        f"{ep.temperature:g}" + (f", seed {ep.seed}" if ep.seed is not None else ", no seed")
    )
    _say(
        f"{planned.pairs.num_rows + planned.no_text} pair(s): {planned.cached} answered before (cache), "
        f"{planned.to_ask} to ask, {planned.no_text} without text (not sent)"
    )
    _say(
        f"estimate: {planned.to_ask} request(s) (at most {planned.max_requests} with {planned.retries} retries each"
        + (f"; budget {budget}" if budget is not None else "")
        + f"), about {planned.prompt_tokens} prompt token(s) (text length / 4) and at most "
        f"{planned.completion_tokens} answer token(s)"
        + (f", about {cost:.4f} at the given prices" if cost is not None else "")
    )


def _progress() -> Callable[[Tally], None]:
    """A line on standard error at every tenth of the pairs to ask (a long session says it is moving)."""
    shown = [0]

    def say(t: Tally) -> None:
        done = t.answered + t.failed
        step = t.to_ask // 10 or 1
        if t.to_ask >= 20 and done // step > shown[0]:
            shown[0] = done // step
            _say(f"  {done} of {t.to_ask} asked ({t.unparsed} unparsed, {t.failed} failed)")

    return say


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
) -> _Asked:
    from ragtriage.judge import ask
    from ragtriage.judge.session import end_session, start_session
    from ragtriage.store.connection import current_dataset_version

    if resumed is not None:
        session = int(resumed["id"])
    else:
        session = start_session(con, purpose, ep, prompt, current_dataset_version(con), settings, planned.pairs)
    try:
        tally = ask(con, planned, ep, prompt, scale, budget=budget, progress=_progress())
    except Exception:
        with suppress(Exception):  # the store's own failure may refuse this too; the error raised stays the cause
            end_session(con, session, "interrupted")
        raise
    stopped = tally.interrupted or tally.budget_spent
    end_session(con, session, "interrupted" if stopped or tally.failed else "running")
    _say(
        f"asked {tally.to_ask} pair(s) in {tally.requests} request(s): {tally.answered} answered "
        f"({tally.unparsed} did not parse: kept, counted, never guessed), {tally.failed} failed"
    )
    for f in tally.failures:
        _say(f"  failed: {f}")
    if stopped:
        why = "interrupted" if tally.interrupted else "the request budget is spent"
        _say(f"{why}: every answer received is stored; `ragtriage judge ... --resume` continues session {session}")
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
    fmt: Format,
) -> None:
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
    show(
        Output(
            figure_rows(cal),
            context,
            notes,
            sections={
                "confusion matrix (rows: people, columns: judge)": confusion_rows(cal),
                "per grade": grade_rows(cal),
                "answers that did not parse": unparsed(answered),
            },
            title="judge calibration against people's labels",
        ),
        fmt,
    )


def _report_fill(
    con: duckdb.DuckDBPyConnection,
    ep: Endpoint,
    prompt: Prompt,
    scale: Scale,
    sessions: list[int],
    pairs: pa.Table,
    k: int,
    fmt: Format,
) -> None:
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
    show(
        Output(
            changes,
            context,
            notes,
            sections={
                "system ranking": ranking_agreement(changes),
                "answers that did not parse": unparsed(answers_of(con, pairs)),
            },
            title="what the judge's labels change",
        ),
        fmt,
    )
