"""Case detail: why the case failed at the top, with what the person recorded beside what the classifier said,
then its ranked list, the labelled evidence it did not retrieve, its leaked results with full reasons, the triage
keys to record a verdict; `n`/`p` move to the next/previous case of the list it was opened from.

The "why" header fits the top of an 80×24 screen (see :mod:`ragtriage.tui.case_layout`); the full query, when
the header had to cut it, is a section below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static
from textual.worker import get_current_worker

from ragtriage.app.browse.case import CaseDetail, case_detail, case_details
from ragtriage.safe_text import visible
from ragtriage.tui.case_layout import SECTIONS, Rendered, body_width, panels_fit, rendered, runs_block
from ragtriage.tui.screens.base import LOAD_GROUP, SCROLL_BINDINGS, TRIAGE_BINDINGS, SectionsScreen, TriageKeys
from ragtriage.tui.screens.table_view import CaseIds

PREFETCH_AHEAD = 8
PREFETCH_BEHIND = 2
PREFETCH_KEEP = 24


class CaseScreen(TriageKeys, SectionsScreen):
    MODE = "failures"
    SHOWN = SECTIONS
    BINDINGS: ClassVar[list[BindingType]] = [
        *TRIAGE_BINDINGS,
        Binding("n", "step(1)", "Next"),
        Binding("p", "step(-1)", "Prev"),
        Binding("right_square_bracket", "shift_runs(1)", "Runs →"),
        Binding("left_square_bracket", "shift_runs(-1)", "← Runs"),
        *SCROLL_BINDINGS,
    ]
    DEFAULT_CSS = """
    CaseScreen #body { height: 1fr; padding: 0 1; scrollbar-gutter: stable; }
    CaseScreen .section { margin-top: 1; }
    CaseScreen #sec-why { margin-top: 0; }
    """

    def __init__(self, case_id: str, case_list: Sequence[str], mode: str, pos: int | None = None) -> None:
        super().__init__()
        self.case_list: Sequence[str] = case_list if len(case_list) else [case_id]
        if isinstance(self.case_list, CaseIds):
            self.pos = self.case_list.position(case_id, pos)
        else:
            self.pos = self.case_list.index(case_id) if case_id in self.case_list else -1
        self.case_id = case_id
        self.view_mode = mode
        self.detail: CaseDetail | None = None
        self.prefetched: dict[tuple[Any, ...], Rendered] = {}
        self.in_flight: set[tuple[Any, ...]] = set()  # keys a prefetch worker is fetching now
        self.run_offset = 0  # first run of the side-by-side window (opened from Compare)

    def bar_detail(self) -> str:
        return (
            f"case {visible(self.case_id)} ({self.pos + 1}/{len(self.case_list)}) · run {visible(self.triage.run_id)}"
        )

    def section_width(self) -> int:
        """Cells a section has: the body less its padding and scrollbar (known after the first layout)."""
        width = self.query_one("#sec-why", Static).content_region.width
        return width if width > 0 else body_width(self.app.size.width)

    def side_runs(self) -> tuple[str, ...]:
        """The runs whose lists stand side by side: Compare's runs when the case was opened from it."""
        runs = self.triage.compare_runs
        return runs if self.view_mode == "compare" and self.triage.run_id in runs and len(runs) > 1 else ()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "shift_runs":
            return bool(self.side_runs())
        return super().check_action(action, parameters)

    def fetch(self, cur: Any) -> Rendered:
        width = self.width_for_workers
        app = self.triage
        early = app.take_early_case(self.case_id)
        runs = self.side_runs()
        if early is not None:  # started by the list's highlight or by open_case, while this screen was being built
            ready = early.result()
            if ready.width == width and not runs:
                return ready
            detail = ready.detail
        else:
            detail = case_detail(cur, app.run_id, self.case_id, app.store, app.cache, app.baseline)
        if not runs:
            return rendered(detail, width)
        window = runs[self.run_offset : self.run_offset + panels_fit(width)]
        details = [
            detail if r == app.run_id else case_detail(cur, r, self.case_id, app.store, app.cache) for r in window
        ]
        return rendered(detail, width, runs_block(details, self.run_offset, len(runs), width))

    def action_shift_runs(self, step: int) -> None:
        runs = self.side_runs()
        fit = panels_fit(self.width_for_workers)
        offset = max(0, min(self.run_offset + step * fit, len(runs) - fit))
        if offset != self.run_offset:
            self.run_offset = offset
            self.reload()

    width_for_workers = 76

    def reload(self) -> None:
        self.width_for_workers = self.section_width()
        ready = None if self.side_runs() else self.triage.early_case_ready(self.case_id, self.width_for_workers)
        if ready is not None:
            self.show_now(ready)  # read and laid out ahead (the list's cursor rested on it): the first layout
            return
        super().reload()

    def on_resize(self) -> None:
        if self.detail is not None and self.section_width() != self.width_for_workers:
            self.prefetched.clear()
            self.reload()

    def detail_key(self, case_id: str) -> tuple[Any, ...]:
        return (*self.stale_key(), case_id)

    def show(self, result: Rendered) -> None:
        d = result.detail
        if (d.run_id, d.case.get("case_id")) != (self.triage.run_id, self.case_id):
            return  # an answer for a case the user has already left
        self.detail = d
        for name in SECTIONS:
            self.query_one(f"#sec-{name}", Static).update(result.sections[name])
        self.query_one("#sec-leaks", Static).display = bool(d.leaks or "leaks" in d.errors)
        self.query_one("#sec-runs", Static).display = bool(self.side_runs())
        self.query_one("#sec-query", Static).display = bool(result.sections["query"].plain)
        if d.leaks:
            final = sum(1 for leak in d.leaks if leak.stage == "final")
            self.set_status(f"LEAKS: {final} final, {len(d.leaks) - final} candidate results", error=True)
        else:
            self.set_status("")
        self.call_after_refresh(self.prefetch_neighbours)  # after the paint: its Python work would slow the paint

    def prefetch_neighbours(self) -> None:
        """Fetch the cases around this one in the background, in one batch (each query reads those cases' rows
        only, so eight cost about what one does), so `n`/`p` show them without a query. A new batch starts when
        fewer than half of it is left ahead."""
        ahead = [
            self.case_list[i] for i in range(self.pos + 1, min(self.pos + 1 + PREFETCH_AHEAD, len(self.case_list)))
        ]
        behind = [self.case_list[i] for i in range(max(0, self.pos - PREFETCH_BEHIND), self.pos)]
        if self.side_runs():
            return  # the neighbours' side-by-side lists are fetched when shown (prefetch holds one run's detail)
        have = self.prefetched.keys() | self.in_flight
        missing = [c for c in ahead + behind if self.detail_key(c) not in have]
        ready_ahead = sum(1 for c in ahead if self.detail_key(c) in have)
        if missing and (ready_ahead < PREFETCH_AHEAD // 2 or any(c in missing for c in behind)):
            self.in_flight |= {self.detail_key(c) for c in missing}
            self.prefetch(missing, self.stale_key(), self.width_for_workers)

    @work(thread=True, group="case-prefetch", exit_on_error=False)
    def prefetch(self, case_ids: list[str], key: tuple[Any, ...], width: int) -> None:
        app = self.triage
        try:
            with app.reader.cursor() as cur:
                found = case_details(cur, key[0], case_ids, app.store, app.cache, key[1])
            for detail in found:
                if get_current_worker().is_cancelled:
                    return
                self.app.call_from_thread(self.keep_prefetched, (*key, detail.case["case_id"]), rendered(detail, width))
        finally:
            self.app.call_from_thread(self.in_flight.difference_update, {(*key, c) for c in case_ids})

    def keep_prefetched(self, key: tuple[Any, ...], found: Rendered) -> None:
        if key[:-1] != self.stale_key():
            return  # notes or run changed meanwhile: the answer may be out of date
        if len(self.prefetched) >= PREFETCH_KEEP:
            self.prefetched.pop(next(iter(self.prefetched)))
        self.prefetched[key] = found

    def stale_key(self) -> tuple[Any, ...]:
        return (*super().stale_key(), self.triage.notes_version, self.run_offset)

    def triage_case(self) -> str | None:
        return self.case_id

    def action_step(self, delta: int) -> None:
        if self.pos < 0:
            return
        i = self.pos + delta
        if not 0 <= i < len(self.case_list):
            self.notify("no more cases in this list", timeout=2)
            return
        self.pos, self.case_id = i, self.case_list[i]
        self.triage.last_case = self.case_id  # Escape returns the list to it
        self.query_one("#body", VerticalScroll).scroll_home(animate=False)
        ready = self.prefetched.get(self.detail_key(self.case_id))
        if ready is None:
            self.reload()
            return
        self.show_now(ready)

    def show_now(self, ready: Rendered) -> None:
        """Show a case read ahead; a slower load of the case shown before must not land after it."""
        self.workers.cancel_group(self, LOAD_GROUP)
        self._loaded_for = self.stale_key()
        self.set_bar()
        self.show(ready)

    def on_note_saved(self) -> None:
        self.reload()
