"""The choices of `ragtriage metrics` (its view, stage, gain and labels), apart from the command and its work so that
both read them without importing each other."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class View(StrEnum):
    summary = "summary"
    stages = "stages"
    judged = "judged"
    latency = "latency"


class Stage(StrEnum):
    final = "final"
    candidate = "candidate"


class Gain(StrEnum):
    exponential = "exponential"
    linear = "linear"


class Engine(StrEnum):
    duckdb = "duckdb"
    spark = "spark"


class Labels(StrEnum):
    human = "human"
    with_judge = "with-judge"


#: ``--labels`` of every command that prints figures (metrics, compare, gate): the people's labels, or those with
#: the holes an LLM judge filled (``ragtriage judge --fill``).
LabelsOpt = Annotated[
    Labels,
    typer.Option("--labels", help="human: people's labels only; with-judge: unjudged units take an LLM judge's grade."),
]
