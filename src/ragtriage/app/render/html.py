"""The self-contained HTML report and its Markdown twin: the same sections, inline SVG plots, no network.

Everything is in one file (styles inline, plots inline SVG, no script, no CDN), so the report opens offline and
can be attached to a ticket. Every data-derived string goes through ``ragtriage.safe_text.html_text`` (the
Markdown twin through ``markdown_cell``); the plots come from ``charts`` (text drawn as paths). Without
matplotlib the report keeps every table and says how to install the plots.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ragtriage.app.render.charts import INSTALL_HINT
from ragtriage.app.render.comparison import Section, section_markdown
from ragtriage.safe_text import html_text as _e
from ragtriage.safe_text import markdown_cell
from ragtriage.version import __version__

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; }
.note { color: #555; font-size: 0.9em; margin: 0.2em 0; }
.warn { color: #a40; }
figure { margin: 1em 0; }
"""


# Nothing may load but the page itself: no script, no remote file, no frame, no form target. Styles are inline
# (the page's own and matplotlib's in each SVG) and the plots' raster parts (a heatmap, a colour bar) are data:
# URIs inside the inline SVG, which a browser fetches as images: without ``img-src data:`` they are blocked.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def _table(s: Section) -> list[str]:
    if not s.rows:
        return ["<p>(none)</p>"]
    out = [
        "<table>",
        "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in s.headers) + "</tr></thead>",
        "<tbody>",
    ]
    for row in s.rows:
        cells = [
            f'<td class="num">{_e(c)}</td>' if i >= s.text_columns else f"<td>{_e(c)}</td>" for i, c in enumerate(row)
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    return out + ["</tbody>", "</table>"]


def to_html(title: str, parts: list[Section], plots: dict[str, str]) -> str:
    """The whole report; ``plots`` maps a caption to inline SVG (empty: the install hint is printed instead)."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">ragtriage {_e(__version__)} · written {stamp}</p>',
    ]
    for s in parts:
        out.append(f"<h2>{_e(s.title)}</h2>")
        if s.prose:
            out += ["<ul>", *[f"<li>{_e(n)}</li>" for n in s.notes], "</ul>"]
            continue
        out += _table(s)
        out += [f'<p class="note">{_e(n)}</p>' for n in s.notes]
    out.append("<h2>Plots</h2>")
    if plots:
        out += [f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>" for caption, svg in plots.items()]
    else:
        out.append(f'<p class="note">Plots need the report extra: <code>{_e(INSTALL_HINT)}</code></p>')
    return "\n".join(out + ["</body></html>"]) + "\n"


def to_markdown(title: str, parts: list[Section], plot_files: dict[str, str]) -> str:
    """Markdown report; ``plot_files`` maps a caption to an SVG path relative to the Markdown file."""
    lines = [f"# {markdown_cell(title)}", "", f"ragtriage {__version__}", ""]
    for s in parts:
        lines += section_markdown(s, level=2)
    lines += ["## Plots", ""]
    if plot_files:
        lines += [f"![{markdown_cell(c)}]({p})\n" for c, p in plot_files.items()]
    else:
        lines += [f"Plots need the report extra: `{INSTALL_HINT}`", ""]
    return "\n".join(lines)
