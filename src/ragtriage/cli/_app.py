"""The typer application object shared by the command modules."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="ragtriage",
    help="Judge retrieval alone: metrics, leakage and scope checks, defect classification, release gate, triage TUI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dataset_app = typer.Typer(help="Dataset quality: versions, splits and label checks.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")
