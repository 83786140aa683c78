"""`ragtriage report --html` opened in a real headless Chromium: the page's own Content-Security-Policy blocks
nothing it needs (every plot's raster parts, the heatmap and its colour bar, decode), and still blocks scripts and
anything remote. The report is written by the CLI as a subprocess from a file store of the shipped sample."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import REQUIRE_ENV, chromium_path, open_page
from tests.factory import load_sample

BROWSER = chromium_path()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        BROWSER is None and not os.environ.get(REQUIRE_ENV),
        reason=f"no Chromium on PATH (apt-get install chromium; {REQUIRE_ENV}=1 makes this a failure)",
    ),
]


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    db = load_sample(folder / "sample.duckdb", runs=("bm25", "hybrid-rerank", "no-acl-filter", "dense"))
    out = folder / "report.html"
    cmd = [sys.executable, "-m", "ragtriage.cli", "report", "--db", str(db), "--baseline", "bm25"]
    cmd += ["--runs", "hybrid-rerank,no-acl-filter,dense", "--html", str(out), "--resamples", "500"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def _executable() -> str:
    assert BROWSER is not None, f"{REQUIRE_ENV} is set but no Chromium is on PATH"
    return BROWSER


def test_every_image_of_the_report_decodes_under_its_csp(report_html: Path, tmp_path: Path) -> None:
    page = open_page(report_html, _executable())
    (tmp_path / "report.png").write_bytes(page.screenshot)
    assert page.violations == []
    assert page.failed_loads == []
    assert page.console_errors == []
    # the heatmap and its colour bar are raster images inside the inline SVG
    assert len(page.images) >= 2, page.images
    for image in page.images:
        assert image["decoded"], image
        assert image["width"] > 0 and image["height"] > 0, image
    assert page.screenshot.startswith(b"\x89PNG")
    # the page is the report, with its plots' captions
    assert "Runs against the baseline" in page.dom_text
    assert "by query_type x run" in page.dom_text


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Counter.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Counter.hits.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_csp_still_blocks_scripts_and_remote_loads(report_html: Path, tmp_path: Path, local_server: str) -> None:
    """Markup that slipped into the page (it never should: every data string is escaped) would run nothing and
    load nothing from elsewhere: a script, an inline handler, a remote image, style sheet and frame are blocked."""
    hostile = (
        "<script>document.title = 'SCRIPT RAN'</script>"
        f'<img src="{local_server}/img.png" onerror="document.title = \'HANDLER RAN\'">'
        f'<link rel="stylesheet" href="{local_server}/style.css">'
        f'<iframe src="{local_server}/frame"></iframe>'
    )
    page_path = tmp_path / "tampered.html"
    page_path.write_text(report_html.read_text(encoding="utf-8").replace("</body>", hostile + "</body>"), "utf-8")
    page = open_page(page_path, _executable())
    blocked = {v["directive"] for v in page.violations}
    assert {"script-src-elem", "script-src-attr", "img-src", "style-src-elem", "frame-src"} <= blocked, blocked
    assert _Counter.hits == []
    assert page.title.startswith("ragtriage: ")
