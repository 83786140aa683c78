"""`compare` and `gate`: a candidate run against a baseline, as figures or as a release decision.

Exit codes of `gate`: 0 every rule passed, 1 a rule failed, 2 the input could not be used (bad gate file, unknown
run, dataset-version mismatch). `compare` exits 0 or 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragtriage.cli._app import DEFAULT_DB_PATH, DbOpt, FormatOpt, app, show
from ragtriage.output import Format, Output

if TYPE_CHECKING:
    from ragtriage.gate.compare import Comparison

console = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)

RunOpt = Annotated[str, typer.Option("--run", help="Candidate run id.")]
BaseOpt = Annotated[str, typer.Option("--baseline", help="Baseline run id.")]


def _fail(exc: Exception) -> typer.Exit:
    err.print(f"error: {exc}", markup=False)
    return typer.Exit(2)


@app.command()
def compare(
    run: RunOpt,
    baseline: BaseOpt,
    db: DbOpt = DEFAULT_DB_PATH,
    k: Annotated[list[int] | None, typer.Option("--k", help="Cutoff(s); repeat for several. Default 3, 5, 10.")] = None,
    by: Annotated[str | None, typer.Option("--by", help="Slice column, e.g. query_type or doc_type.")] = None,
    split: Annotated[str | None, typer.Option("--split", help="Only cases of this split (dev|holdout).")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="Only these metrics, e.g. nDCG@5.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and randomization test.")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap / randomization resamples.")] = 10_000,
    fmt: FormatOpt = Format.table,
) -> None:
    """Paired per-case comparison: W/T/L, mean difference, bootstrap 95% CI, randomization p, worst cases."""
    import duckdb

    from ragtriage.gate.compare import compare as run_compare
    from ragtriage.store import StoreError, connect

    try:
        con = connect(db, read_only=True)
    except (StoreError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    try:
        result = run_compare(
            con,
            run,
            baseline,
            tuple(k or (3, 5, 10)),
            by=by,
            split=split,
            seed=seed,
            n_resamples=resamples,
            metrics=metric or None,
        )
    except (StoreError, ValueError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    finally:
        con.close()
    show(_comparison_output(result), fmt)


def _comparison_output(result: Comparison) -> Output:
    """The summary rows (numbers, for json/csv), the same rows formatted for a reader, and the worst cases."""
    import pyarrow as pa

    from ragtriage.gate import compare_reports as rep

    text = rep.text_rows(result)
    shown = pa.table(
        [pa.array(col, pa.string()) for col in zip(*text, strict=True)]
        if text
        else [pa.array([], pa.string()) for _ in rep.TEXT_HEADERS],
        names=rep.TEXT_HEADERS,
    )
    context = {
        "run": result.run_id,
        "baseline": result.baseline,
        "dataset": result.dataset_version[:12],
        "k": list(result.ks),
        "by": result.by,
        "split": result.split or "all splits",
        "stage": "final",
        "test": "paired bootstrap 95% CI and sign-flip p",
        "resamples": result.n_resamples,
        "seed": result.seed,
        "unpaired": result.unpaired,
    }
    return Output(result.summary, context, sections={"worst": result.worst}, shown=shown)


@app.command()
def gate(
    gate_file: Annotated[Path, typer.Option("--gate", help="Gate file (TOML), see docs/gate.md.")],
    run: RunOpt,
    baseline: BaseOpt,
    db: DbOpt = DEFAULT_DB_PATH,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML here.")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="Write a Markdown summary here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the verdict as JSON here.")] = None,
    record: Annotated[bool, typer.Option(help="Store the verdict in the gate_verdicts table.")] = True,
) -> None:
    """Release gate: exit 0 when every rule passes, 1 when any fails, 2 on unusable input."""
    import duckdb

    from ragtriage.gate import reports
    from ragtriage.gate.config import GateFileError, parse_gate
    from ragtriage.gate.verdict import evaluate_gate, record_verdict
    from ragtriage.store import StoreError, connect

    try:
        config = parse_gate(gate_file)
        con = connect(db, read_only=not record or not db.exists())
    except (GateFileError, StoreError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    try:
        verdict = evaluate_gate(con, config, run, baseline)
        if record:
            record_verdict(con, verdict)
    except (StoreError, ValueError, duckdb.Error) as exc:
        raise _fail(exc) from exc
    finally:
        con.close()
    for path, text in ((junit, reports.to_junit), (markdown, reports.to_markdown), (json_out, reports.to_json)):
        if path is not None:
            path.write_text(text(verdict), encoding="utf-8")
    console.print(reports.to_text(verdict), markup=False, end="")
    raise typer.Exit(0 if verdict.passed else 1)
