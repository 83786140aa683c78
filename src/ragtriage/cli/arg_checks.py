"""Checks of a command's own arguments, made at its top, before it opens, reads or writes anything: a value out of
its range is refused (exit 2, naming the option), never clamped, replaced by a default or found out after a
write. A NaN passes every comparison, so a float option is checked to be finite first."""

from __future__ import annotations

import math

from ragtriage.cli._app import fail


def finite(option: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise fail(f"{option} {value}: give a finite number")


def at_least(option: str, value: float | None, low: float, *, strict: bool = False) -> None:
    """``value`` >= ``low`` (> with ``strict``); None (not given) passes."""
    if value is None:
        return
    finite(option, value)
    if value < low or (strict and value == low):
        raise fail(f"{option} {value:g}: give a number {'>' if strict else '>='} {low:g}")


def between(option: str, value: float | None, low: float, high: float, *, open_low: bool = False) -> None:
    """``low`` <= ``value`` <= ``high`` (``low`` excluded with ``open_low``); None (not given) passes."""
    if value is None:
        return
    finite(option, value)
    if value > high or value < low or (open_low and value == low):
        raise fail(f"{option} {value:g}: give a number in {'(' if open_low else '['}{low:g}, {high:g}]")


def measures(option: str, names: list[str] | None) -> None:
    """Every measure name given parses (``metrics.measures``, the one parser); none given is the command's
    default."""
    from ragtriage.metrics.measures import parse_measures

    if not names:
        return
    try:
        parse_measures(names)
    except ValueError as exc:
        raise fail(f"{option}: {exc}") from exc
