"""The choices of `ragtriage metrics` (its view, stage, gain and labels), apart from the command and its work so that
both read them without importing each other."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Annotated

import typer

from ragtriage.contract.limits import INT_MAX, INT_MIN


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


class Cases(StrEnum):
    all = "all"
    with_relevant = "with-relevant"
    in_run = "in-run"


#: ``--cases`` of every command that prints figures: the one population switch (``metrics.context.CASE_CHOICES``)
CasesOpt = Annotated[
    Cases,
    typer.Option(
        "--cases",
        help="Which labelled cases count in every figure: all (trec_eval's: none relevant scores 0), "
        "with-relevant (only cases with a relevant label), in-run (only cases the run has a list for).",
    ),
]
#: ``--threshold`` of every command that reads a store: the store holds the grades, so any level is answered
StoreThresholdOpt = Annotated[
    int | None,
    typer.Option(
        "--threshold",
        min=INT_MIN,
        max=INT_MAX,
        help="grade >= THRESHOLD is relevant in every figure (trec_eval -l); default: the dataset's threshold.",
    ),
]


#: ``--min-overlap`` of every command that prints figures of a span dataset (docs/spans.md)
MinOverlapOpt = Annotated[
    int | None,
    typer.Option(
        "--min-overlap",
        min=1,
        max=INT_MAX,
        help="Span datasets: a result takes an evidence span's grade when they share at least this many "
        "characters (default 1).",
    ),
]


@contextmanager
def asked(labels: Labels, cases: Cases, threshold: int | None, min_overlap: int | None = None) -> Iterator[None]:
    """The command's figure settings for every context resolved inside the block (``metrics.context.using``)."""
    from ragtriage.metrics.context import using

    with using(labels=labels.value, cases=cases.value, threshold=threshold, min_overlap=min_overlap):
        yield
