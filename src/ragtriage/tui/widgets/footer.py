"""A footer that shows every key the view offers, on a second row when one row is too narrow, always with the
help key, and is rebuilt only when what it shows changes.

Textual's Footer lays every key out in one row and docks the command-palette key on the right on top of it: at
80 columns the Failures view's keys ran under the palette key and left stray letters beside it ("palettet"), and
dropping the keys that did not fit hid the filters and the note key a person needs there. This one fills rows
beside the palette key, in the bindings' order, up to two rows (the help key last; it lists every key, the
unshown ones too), and lays them out again when the terminal is resized.

Textual's Footer also rebuilds every key widget each time the screen's bindings are refreshed (focus changes,
screen pushes, mounts), keys changed or not, several times per case opened, holding the UI thread while the
case's reads wait for the GIL. This one rebuilds only when the keys it would show differ from those shown, and once
for any number of changes before the rebuild runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from textual.screen import Screen

HELP_KEYS = ("question_mark", "?")


def key_width(key: FooterKey, compact: bool) -> int:
    """Cells one key takes: key, a space and its description, then its right margin (compact) or paddings."""
    pad = 0 if compact else 2
    desc = (1 + cell_len(key.description)) if key.description else 0
    return cell_len(key.key_display) + desc + pad + 1


MAX_ROWS = 2


def rows_of(keys: list[FooterKey], budget: int, compact: bool, max_rows: int = MAX_ROWS) -> list[list[FooterKey]]:
    """``keys`` in order, in rows of at most ``budget`` cells, at most ``max_rows`` of them; the help key ends the
    last row, and keys past the last row are left out (the help screen lists them)."""
    helps = [k for k in keys if k.key in HELP_KEYS]
    queue = [k for k in keys if k not in helps]
    rows: list[list[FooterKey]] = []
    while len(rows) < max_rows:
        last = len(rows) == max_rows - 1
        left = budget - (sum(key_width(h, compact) for h in helps) if last else 0)
        row: list[FooterKey] = []
        while queue and key_width(queue[0], compact) <= left:
            left -= key_width(queue[0], compact)
            row.append(queue.pop(0))
        if not queue and sum(key_width(h, compact) for h in helps) <= left:
            rows.append(row + helps)
            return rows
        if last:
            row += helps
        rows.append(row)
    return rows


class FittingFooter(Footer):
    """Footer(compact=True) whose row never overflows (see the module docstring)."""

    _laid_out_for = 0
    #: What the last compose showed (:meth:`shown_keys`): None until the first compose (at mount).
    _composed: tuple[Any, ...] | None = None
    #: A rebuild is asked for and has not run yet: it reads the keys when it runs, so a change meanwhile needs no
    #: second rebuild.
    _asked = False

    def shown_keys(self) -> tuple[Any, ...]:
        """Everything a compose reads from the screen's bindings (the shown ones and the palette's), as comparable
        values."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple(
            (key, binding.key, binding.description, binding.action, binding.group, enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette
        )

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if self.is_attached and screen is self.screen and screen.app.app_focus:
            if self._asked or self.shown_keys() == self._composed:
                return  # a rebuild is coming, or the keys are those shown: Footer would rebuild every key for nothing
            self._asked = True
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        widgets = list(super().compose())
        palette = [w for w in widgets if isinstance(w, FooterKey) and w.has_class("-command-palette")]
        keys = [w for w in widgets if isinstance(w, FooterKey) and w not in palette]
        others: list[Widget] = [w for w in widgets if w not in palette and w not in keys]
        width = self.size.width or self.app.size.width
        self._laid_out_for = width
        self._composed, self._asked = self.shown_keys(), False
        budget = width - sum(key_width(p, self.compact) + 1 for p in palette) - 1
        rows = rows_of(keys, budget, self.compact)
        self.styles.height = max(1, len(rows))
        self.styles.layout = "vertical" if len(rows) > 1 else "horizontal"
        yield from others
        if len(rows) > 1:
            for row in rows:
                yield HorizontalGroup(*row, classes="footer-row")
        else:
            yield from (k for row in rows for k in row)
        yield from palette

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._laid_out_for:
            self.call_after_refresh(self.recompose)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(compact=True, **kwargs)
        # Compose the keys at mount rather than after the screen's first bindings refresh (an empty row until
        # then, and a second rebuild of every key): the refresh that follows finds the same keys and is skipped.
        self.set_reactive(Footer._bindings_ready, True)
