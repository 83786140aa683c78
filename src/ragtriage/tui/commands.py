"""Command palette (ctrl+p): the app's commands and every case id of the dataset (open its detail).

Run ids and case ids are data: they are shown through the one sanitiser and as literal content (Textual reads a
string prompt, and its fuzzy matcher reads a candidate, as markup)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.fuzzy import Matcher

from ragtriage.safe_text import visible
from ragtriage.tui.host import host

MAX_CASE_HITS = 50


def literal_highlight(matcher: Matcher, text: str) -> Content:
    """``matcher.highlight`` without reading ``text`` as markup: a case id ``[b]q8[/b]`` shows its brackets."""
    content = Content(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets if score else ():
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class TriageCommands(Provider):
    async def startup(self) -> None:
        host(self.app).ensure_case_index()

    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app = host(self.app)
        out: list[tuple[str, Callable[[], object], str]] = [
            (f"View: {label}", partial(app.show_view, mode), f"key {key}") for key, mode, label in app.view_keys()
        ]
        out += [
            ("Export triage CSV", app.action_export, "key E"),
            (f"Next run (now {visible(app.run_id)})", app.action_next_run, "key R"),
            ("Help: every key of this view and the app", app.action_help, "key ?"),
        ]
        out += [
            (f"Use run: {visible(r)}", partial(app.use_run, r), "analyse this run") for r in app.runs if r != app.run_id
        ]
        return out

    async def discover(self) -> Hits:
        for name, fn, help_text in self.commands():
            yield DiscoveryHit(Content(name), fn, text=name, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, fn, help_text in self.commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, literal_highlight(matcher, name), fn, text=name, help=help_text)
        app = host(self.app)
        shown = 0
        for case_id in app.case_index:
            shown_id = visible(case_id)
            score = matcher.match(shown_id)
            if score > 0:
                yield Hit(
                    score,
                    literal_highlight(matcher, shown_id),
                    partial(app.open_case, case_id, []),
                    text=shown_id,
                    help="open case detail",
                )
                shown += 1
                if shown >= MAX_CASE_HITS:
                    break
