"""Where the bundled sample (sample_runs/) is: inside the installed wheel, or beside the source checkout."""

from __future__ import annotations

from pathlib import Path

#: The run `ragtriage demo` opens and the baseline it compares with: the README's
#: `ragtriage tui --run hybrid-rerank --baseline bm25`, the sample's best run against its lexical baseline.
DEMO_RUN = "hybrid-rerank"
DEMO_BASELINE = "bm25"


def sample_runs_path() -> Path:
    """The installed copy wins; an editable install or a source checkout uses the repository's sample_runs/."""
    installed = Path(__file__).parent / "_sample_runs"
    if installed.is_dir():
        return installed
    checkout = Path(__file__).resolve().parents[2] / "sample_runs"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError("the bundled sample_runs/ folder is missing from this installation")


def sample_run_dirs() -> list[Path]:
    """Every run folder of the sample, in name order."""
    return sorted(p for p in (sample_runs_path() / "runs").iterdir() if (p / "run.json").exists())
