"""A footer that shows only the keys that fit, and always the help key that lists the rest.

Textual's Footer lays every key out in one row and docks the command-palette key on the right on top of it: at
80 columns the Failures view's keys ran under the palette key and left stray letters beside it ("palettet").
This one drops keys from the end of the row until the rest fit beside the palette key, keeping `?` (the help
screen lists every key of the view), and lays the row out again when the terminal is resized.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

HELP_KEYS = ("question_mark", "?")


def key_width(key: FooterKey, compact: bool) -> int:
    """Cells one key takes: key, a space and its description, then its right margin (compact) or paddings."""
    pad = 0 if compact else 2
    desc = (1 + cell_len(key.description)) if key.description else 0
    return cell_len(key.key_display) + desc + pad + 1


def fitting(keys: list[FooterKey], budget: int, compact: bool) -> list[FooterKey]:
    """The longest prefix of ``keys`` that fits in ``budget`` cells, plus the help key wherever it was."""
    help_keys = [k for k in keys if k.key in HELP_KEYS]
    left = budget - sum(key_width(k, compact) for k in help_keys)
    shown: list[FooterKey] = []
    for k in keys:
        if k in help_keys:
            continue
        w = key_width(k, compact)
        if w > left:
            break
        shown.append(k)
        left -= w
    return [k for k in keys if k in shown or k in help_keys]


class FittingFooter(Footer):
    """Footer(compact=True) whose row never overflows (see the module docstring)."""

    _laid_out_for = 0

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        palette = [w for w in widgets if isinstance(w, FooterKey) and w.has_class("-command-palette")]
        keys = [w for w in widgets if isinstance(w, FooterKey) and w not in palette]
        others: list[Widget] = [w for w in widgets if w not in palette and w not in keys]
        width = self.size.width or self.app.size.width
        self._laid_out_for = width
        budget = width - sum(key_width(p, self.compact) + 1 for p in palette) - 1
        yield from others
        yield from fitting(keys, budget, self.compact)
        yield from palette

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._laid_out_for:
            self.call_after_refresh(self.recompose)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(compact=True, **kwargs)
