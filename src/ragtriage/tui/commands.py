"""Command palette (ctrl+p): the app's commands and every case id of the dataset (open its detail)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from ragtriage.tui.app import TriageApp

MAX_CASE_HITS = 50


class TriageCommands(Provider):
    async def startup(self) -> None:
        self.app.ensure_case_index()  # type: ignore[attr-defined]

    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app: TriageApp = self.app  # type: ignore[assignment]
        out: list[tuple[str, Callable[[], object], str]] = [
            (f"View: {label}", partial(app.show_view, mode), f"key {key}") for key, mode, label in app.view_keys()
        ]
        out += [
            ("Export triage CSV", app.action_export, "key E"),
            ("Next run", app.action_next_run, f"key R (now {app.run_id})"),
            ("Help: every key of this view and the app", app.action_help, "key ?"),
        ]
        out += [(f"Use run: {r}", partial(app.use_run, r), "analyse this run") for r in app.runs if r != app.run_id]
        return out

    async def discover(self) -> Hits:
        for name, fn, help_text in self.commands():
            yield DiscoveryHit(name, fn, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, fn, help_text in self.commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), fn, text=name, help=help_text)
        app: TriageApp = self.app  # type: ignore[assignment]
        shown = 0
        for case_id in app.case_index:
            score = matcher.match(case_id)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(case_id),
                    partial(app.open_case, case_id, []),
                    text=case_id,
                    help="open case detail",
                )
                shown += 1
                if shown >= MAX_CASE_HITS:
                    break
