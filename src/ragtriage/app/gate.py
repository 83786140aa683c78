"""The release gate as one call: every candidate's verdict against the baseline, stored when asked, with the
labels line that decided them (the rules themselves are ``ragtriage.gate``'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from ragtriage.gate.config import GateConfig
    from ragtriage.gate.outcome import Verdict


def gate_verdicts(
    con: duckdb.DuckDBPyConnection, config: GateConfig, runs: Sequence[str], baseline: str, *, record: bool
) -> tuple[list[Verdict], str]:
    """(each run's verdict, the labels the figures used); with ``record`` each verdict is stored."""
    from ragtriage.gate.verdict import evaluate_gate, record_verdict
    from ragtriage.metrics.context import labels_header

    in_use = labels_header(con)["labels"]
    verdicts = [evaluate_gate(con, config, r, baseline) for r in runs]
    if record:
        for verdict in verdicts:
            record_verdict(con, verdict)
    return verdicts, in_use
