"""`ragtriage judge`: LLM relevance labels for unjudged results, calibrated against the people's labels first."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ragtriage.app.render.output import Format
from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, input_errors, say, show, split_runs
from ragtriage.cli._app import fail as _fail
from ragtriage.cli._app import open_existing as _open


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
    from ragtriage.app.judge import EXIT_UNANSWERED, Unanswered, run_judge
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
        else {"runs": split_runs(runs), "depth": depth, "stage": stage, "pairs": str(pairs) if pairs else None}
    )
    try:
        con = _open(db, read_only=dry_run)
        try:
            report = run_judge(
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
                lambda text: say(text, err=True),
            )
            if report is not None:
                show(report, fmt)
        finally:
            con.close()
    except (NoJudgeLabels, Unanswered) as exc:
        say(str(exc), err=True)
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
