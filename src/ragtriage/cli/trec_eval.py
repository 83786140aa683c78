"""`ragtriage trec-eval [flags] QRELS RUN`: trec_eval's command line, printing what trec_eval prints.

The options mirror trec_eval's (short and long names); the work is in ``ragtriage.trec_eval``, imported when the
command runs so that `ragtriage --help` stays cheap.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer._click import Context
from typer._click.exceptions import UsageError
from typer.core import TyperCommand

from ragtriage.cli._app import app, input_errors


class _TrecEvalCommand(TyperCommand):
    """trec_eval's exit status on a command line it cannot parse (1, where click says 2)."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except UsageError as exc:
            setattr(exc, "exit_code", 1)  # noqa: B010  (click reads it from the instance)
            raise


def _say(message: object) -> None:
    """A message on stderr as one line per line (no wrapping: its first line is trec_eval's, for scripts)."""
    from ragtriage.safe_text import visible

    sys.stderr.write(visible(str(message), keep_newlines=True) + "\n")
    sys.stderr.flush()


@app.command("trec-eval", cls=_TrecEvalCommand, context_settings={"help_option_names": ["-h", "--help"]})
def trec_eval_cmd(
    qrels: Annotated[Path, typer.Argument(help="TREC qrels file (qid iter docno rel).")],
    run: Annotated[Path, typer.Argument(help="TREC run file (qid Q0 docno rank score tag); '-': stdin.")],
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "-m",
            "--measure",
            help="measure[.params] or a nickname (official, set, all_trec); repeatable. Default: official.",
        ),
    ] = None,
    query: Annotated[bool, typer.Option("-q", "--query_eval_wanted", help="Also print each query's values.")] = False,
    complete: Annotated[
        bool,
        typer.Option("-c", "--complete_rel_info_wanted", help="Average over every qrels query; absent ones score 0."),
    ] = False,
    level: Annotated[int, typer.Option("-l", "--level_for_rel", help="Relevant: rel >= this level.")] = 1,
    nosummary: Annotated[bool, typer.Option("-n", "--nosummary", help="Print no summary (all) lines.")] = False,
    max_docs: Annotated[
        int | None, typer.Option("-M", "--Max_retrieved_per_topic", help="Evaluate each list's first N only.")
    ] = None,
    judged: Annotated[
        bool, typer.Option("-J", "--Judged_docs_only", help="Drop unjudged documents before evaluating.")
    ] = False,
    num_docs: Annotated[
        int, typer.Option("-N", "--Number_docs_in_coll", help="Documents in the collection (utility's p4).")
    ] = 0,
    rel_format: Annotated[
        str, typer.Option("-R", "--Rel_info_format", help="QRELS's format: qrels, prefs, qrels_prefs, qrels_jg.")
    ] = "qrels",
    zscores: Annotated[
        Path | None,
        typer.Option("-Z", "--Zscore", help="Print z-scores against this file's lines (qid measure mean stddev)."),
    ] = None,
    results_format: Annotated[
        str, typer.Option("-T", "--Results_format", help="The run's format: trec_results (the only one).")
    ] = "trec_results",
    debug: Annotated[
        str, typer.Option("-D", "--Debug_level", help="trec_eval's debug level: 0 only (no debug output).")
    ] = "0",
    version: Annotated[bool, typer.Option("-v", "--version", help="Print the version on stderr and exit.")] = False,
) -> None:
    """trec_eval's output for QRELS and RUN, line for line (docs/trec_eval.md): same measures, order, layout.

    RUN may be '-' (standard input). A run tag or query id is written as its bytes when stdout is not a terminal
    (what trec_eval writes); on a terminal its control characters show as visible symbols (U+2400 block)."""
    from ragtriage.trec_eval import Options, TrecEvalError, run_trec_eval

    if version:
        _say("trec_eval version 10.0-rc3 (ragtriage trec-eval)")
        raise typer.Exit(0)
    if results_format != "trec_results":
        _say(f"trec_eval: Illegal retrieval results format '{results_format}'")
        raise typer.Exit(2)
    if debug.split(".")[0].strip() not in ("0", ""):
        _say(f"trec-eval: -D {debug}: trec_eval's debug output is not reproduced; only -D 0 is accepted")
        raise typer.Exit(1)
    raw = not sys.stdout.isatty()
    opts = Options(
        list(measure or []),
        query,
        complete,
        level,
        not nosummary,
        max_docs,
        judged,
        num_docs,
        rel_format=rel_format,
        zscores=zscores,
        raw=raw,
    )
    try:
        out = run_trec_eval(qrels, run, opts, stdin=sys.stdin.buffer if str(run) == "-" else None)
    except TrecEvalError as exc:
        _say(exc)
        raise typer.Exit(exc.code) from exc
    except input_errors() as exc:
        _say(f"trec-eval: {exc}")
        raise typer.Exit(2) from exc
    sys.stdout.buffer.write(out.text.encode(out.encoding, errors="replace"))
    sys.stdout.flush()
    if out.error is not None:
        _say(out.error)
        raise typer.Exit(out.code)
