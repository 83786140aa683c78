"""The overview's one labels line: shown on a store holding judged labels, hostile text shown as typed, absent
otherwise (so every other screen and snapshot is as before)."""

from __future__ import annotations

from rich.console import Console

from ragtriage.tui.screens.overview import identity_block

RUN = {"run_id": "r1", "k": 10}
DS = {"name": "ds", "version": "1", "unit": "chunk", "relevance_threshold": 2, "grade_min": 0, "grade_max": 3}


def _text(ds: dict[str, object]) -> str:
    console = Console(width=80, record=True, color_system=None)
    console.print(identity_block(RUN, ds))
    return console.export_text()


def test_labels_line_only_with_judged_labels() -> None:
    assert "labels" not in _text(DS)
    assert "labels" not in _text({**DS, "labels": "human only"})
    shown = _text({**DS, "labels": "human only (12 judged label(s) stored, not used)"})
    assert "labels  human only (12 judged label(s) stored, not used)" in shown
    hostile = _text({**DS, "labels": "human only \x1b[2J[bold]x[/]"})
    assert "\x1b" not in hostile and "␛[2J[bold]x[/]" in hostile
