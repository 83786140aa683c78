"""Every output format in one place: ``output`` (table, json, csv, markdown, trec for any command's result),
``comparison`` (the sections of a comparison), ``html`` and ``charts`` (the report); CSV cells through
``ragtriage.csv_out``, displayed text through ``ragtriage.safe_text``.

The result types every writer reads are here, free of rich, so a use case of ``ragtriage.app`` can return one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


class Format(StrEnum):
    """The output formats every command accepts (``--format``)."""

    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"
    trec = "trec"


class OutputError(ValueError):
    """A result cannot be written in the requested format (say which format to use instead)."""


@dataclass(frozen=True)
class Output:
    """A typed result ready to print.

    ``rows`` are the data (every column, in json and csv); ``shown`` optionally replaces them in the human
    formats (table, markdown) when a reader needs fewer or pre-formatted columns. ``sections`` are further named
    tables (worst regressions, counts). ``context`` says what the figures are of (run, k, threshold, gain):
    every value is printed in the header and scalar ones become CSV columns.
    """

    rows: pa.Table
    context: Mapping[str, Any] = field(default_factory=dict)
    notes: Sequence[str] = ()
    sections: Mapping[str, pa.Table] = field(default_factory=dict)
    shown: pa.Table | None = None
    json_columns: Sequence[str] = ()
    title: str | None = None
    empty: str = "no rows"
