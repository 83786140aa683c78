"""The forms a secret a client sends can take in what a server answers, and their removal from any text the client
prints, logs or stores: one rule for every client of ragtriage that sends a credential (the judge's API key, the
recorder's headers and URL credentials).

A hostile or careless server may echo a credential back: verbatim (an error body quoting the Authorization
header), percent-encoded (a URL), or base64-encoded (a Basic header, a dump of the request headers). A base64 text
spells the same bytes three ways depending on where they start within a 3-byte group, so each secret is also
matched in the part of each of the three alignments that its own bytes alone fix, standard and URL-safe.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from urllib.parse import quote

REDACTED = "<redacted>"
MIN_FORM = 4  # a shorter form would mask ordinary text, and a credential that short hides nothing anyway


def _base64_cores(secret: bytes) -> set[str]:
    """The base64 characters that encode only ``secret``'s bytes, at each of the three alignments."""
    out: set[str] = set()
    for lead in range(3):
        encoded = base64.b64encode(b"\0" * lead + secret).decode().rstrip("=")
        start = (0, 2, 3)[lead]  # characters mixing the leading filler's bits with the secret's
        end = len(encoded) - (1 if (lead + len(secret)) % 3 else 0)  # the last one mixes in what follows
        core = encoded[start:end]
        out |= {core, core.replace("+", "-").replace("/", "_")}
    return out


def secret_forms(values: Iterable[str]) -> list[str]:
    """Every form of every secret in ``values`` to mask, longest first (so a longer form is masked whole)."""
    found: set[str] = set()
    for value in values:
        if not value:
            continue
        found |= {value, quote(value, safe="")}
        found |= _base64_cores(value.encode())
    return sorted((s for s in found if len(s) >= MIN_FORM), key=len, reverse=True)


def redact(text: str, forms: Iterable[str]) -> str:
    """``text`` with every form replaced by :data:`REDACTED`."""
    for form in forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text
