"""One results file per bench run: bench/results/<bench>-<UTC time>.json, read by scripts/perf_doc.py.

Every file says where and when it was measured (machine, cores, memory, load average before and after, Python and
package versions), with which parameters, and holds every figure of the run as rows of one table: the peers'
figures (pytrec_eval, ir_measures, ranx, a plain DuckDB query) are rows of the same file, measured in the same
run, so a ratio is always between two figures taken minutes apart on the same machine. Nothing is rounded here.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
PACKAGES = ("ragtriage", "duckdb", "pyarrow", "numpy", "textual", "pytrec-eval-terrier", "ir-measures", "ranx")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


class Recorder:
    """Collects one bench run's figures; :meth:`write` saves them. Start it before the first measurement, so the
    load average it records is the one the figures were taken under."""

    def __init__(self, bench: str, params: dict[str, Any], *, shared: bool = True) -> None:
        self.bench = bench
        self.params = params
        self.shared = shared
        self.started = datetime.now(UTC)
        self.load_before = os.getloadavg()
        self.figures: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def add(self, **figure: Any) -> None:
        """One row: what was measured (``case``, ``name``, the tool) and its figures (seconds, MiB, ratios...)."""
        self.figures.append(figure)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def add_phases(self, results: dict[str, dict[str, Any]]) -> None:
        """Every scalar figure of phase-by-phase results (``{phase: {name: value}}``), one row each; a phase
        that failed is a row with its error."""
        for phase, figures in results.items():
            for name, value in figures.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    self.add(phase=phase, name=name, value=value)
                elif name == "error":
                    self.add(phase=phase, name=name, value=None, note=str(value))

    def write(self, folder: Path = RESULTS) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        doc = {
            "bench": self.bench,
            "date": self.started.isoformat(timespec="seconds"),
            "command": " ".join(["python", *sys.argv]),
            "machine": {
                "cpu": _cpu_model(),
                "cores": os.cpu_count(),
                "memory_gib": _memory_gib(),
                "system": f"{platform.system()} {platform.release()}",
                "shared": self.shared,
                "load_average_before": [round(x, 2) for x in self.load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
            },
            "versions": _versions(),
            "params": self.params,
            "figures": self.figures,
            "notes": self.notes,
        }
        path = folder / f"{self.bench}-{self.started.strftime('%Y%m%dT%H%M%SZ')}.json"
        path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")
        return path
