"""Single-key triage shared by the Failures list and the case detail: category, status, note.

Each key queues one change to the app's notes writer, which saves it at once (durable when the footer message
says "saved"). Digits keep every key one stroke on any keyboard layout over SSH.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from ragtriage.notes import CATEGORIES, STATUSES
from ragtriage.tui.screens.base import DataScreen

CATEGORY_KEYS = dict(zip("1234", CATEGORIES, strict=True))
STATUS_KEYS = dict(zip("5678", STATUSES, strict=True))

TRIAGE_BINDINGS: list[BindingType] = [
    *(
        Binding(
            k,
            f"set_category('{c}')",
            "category" if k == "1" else c,
            key_display="1-4" if k == "1" else k,
            show=k == "1",
        )
        for k, c in CATEGORY_KEYS.items()
    ),
    Binding("0", "set_category('')", "clear category", show=False),
    *(
        Binding(
            k, f"set_status('{s}')", "status" if k == "5" else s, key_display="5-8" if k == "5" else k, show=k == "5"
        )
        for k, s in STATUS_KEYS.items()
    ),
    Binding("e", "edit_note", "Note"),
]

KEY_HELP = (
    "1 dataset  2 ingestion  3 ranking  4 security  0 clear category\n"
    "5 open  6 confirmed  7 fixed  8 wont-fix\n"
    "e edit note (ctrl+s saves, Escape cancels)"
)


class TriageKeys(DataScreen):
    """A view that knows which case is current (``triage_case``): the Failures list, the case screen."""

    TRIAGE: ClassVar[list[BindingType]] = TRIAGE_BINDINGS

    def triage_case(self) -> str | None:
        raise NotImplementedError

    def target_case(self) -> str | None:
        """The current case, or None with a word on screen: a triage key is never silently lost."""
        case_id = self.triage_case()
        if not case_id:
            self.notify(
                "no case selected yet (the list is still loading): nothing saved",
                severity="warning",
                timeout=3,
            )
        return case_id

    def action_set_category(self, category: str) -> None:
        case_id = self.target_case()
        if case_id:
            self.triage.save_note(case_id, category=category)

    def action_set_status(self, status: str) -> None:
        case_id = self.target_case()
        if case_id:
            self.triage.save_note(case_id, status=status)

    def action_edit_note(self) -> None:
        case_id = self.target_case()
        if case_id:
            self.triage.edit_note(case_id)
