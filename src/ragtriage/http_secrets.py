"""The forms a secret a client sends can take in what a server answers, and their removal from any text the client
prints, logs or stores: one rule for every client of ragtriage that sends a credential (the judge's API key, the
recorder's headers and URL credentials).

A hostile or careless server may echo a credential back: verbatim (an error body quoting the Authorization
header), percent-encoded (a URL), or base64-encoded (a Basic header, a dump of the request headers). A base64 text
spells the same bytes three ways depending on where they start within a 3-byte group, so each secret is also
matched in the part of each of the three alignments that its own bytes alone fix, standard and URL-safe.

What a client describes (a session's endpoint, a run's retriever) is stripped first: a URL loses its password and
any secret-looking query value, a request template the string values of secret-looking keys.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

REDACTED = "<redacted>"
MIN_FORM = 4  # a shorter form would mask ordinary text, and a credential that short hides nothing anyway
SECRET_WORDS = ("token", "key", "secret", "password", "passwd", "auth", "sig", "credential")
SECRET_VALUE = re.compile(r'("[^"]*(?:' + "|".join(SECRET_WORDS) + r')[^"]*"\s*:\s*)"(?:[^"\\]|\\.)*"', re.IGNORECASE)


def secret_looking(name: str) -> bool:
    """Whether a query parameter or key named ``name`` holds a secret by its name."""
    return any(w in name.lower() for w in SECRET_WORDS)


def strip_template(text: str) -> str:
    """The request template with the string value of every secret-looking key (``"api_key": "..."``) redacted."""
    return SECRET_VALUE.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)


def strip_url(url: str) -> str:
    """The URL without its password and with secret-looking query values redacted."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    if parts.username:
        netloc = f"{parts.username}:{REDACTED}@{netloc}" if parts.password else f"{parts.username}@{netloc}"
    query = [(k, REDACTED if secret_looking(k) else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="<>"), ""))


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


class Secrets:
    """Every secret a client sends (header values, the token of a ``Bearer`` header, URL credentials and their
    Basic form, secret-looking query values, the string values of a template's secret-looking keys) in every form
    of :func:`secret_forms`, to be masked in any text it prints, logs or stores."""

    def __init__(self, headers: Mapping[str, str], url: str = "", template: str = "") -> None:
        found: set[str] = set()
        for value in headers.values():
            found |= {value, *value.split(" ", 1)[1:]}
        parts = urlsplit(url)
        if parts.password:
            user, password = unquote(parts.username or ""), unquote(parts.password)
            found |= {parts.password, password, base64.b64encode(f"{user}:{password}".encode()).decode()}
        found |= {v for k, v in parse_qsl(parts.query) if secret_looking(k)}
        found |= {m.group(0).split(":", 1)[1].strip().strip('"') for m in SECRET_VALUE.finditer(template)}
        self.forms = secret_forms(found)

    def redact(self, text: str) -> str:
        return redact(text, self.forms)
