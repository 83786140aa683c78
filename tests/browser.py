"""A real headless Chromium driven over the DevTools protocol, for tests of the HTML the tool writes.

The browser is Debian's ``chromium`` (``.ci/run`` installs it). It is started with ``--remote-debugging-pipe``:
DevTools messages are NUL-terminated JSON on file descriptors 3 (to the browser) and 4 (from it), so no
websocket library and no network port are involved. A page is opened in its own target; a script injected
before the page's own content records every ``securitypolicyviolation`` event and every resource that failed
to load, and the console's error entries are kept, so a test can assert that the page's Content-Security-Policy
blocked nothing and that every image decoded.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUIRE_ENV = "RAGTRIAGE_REQUIRE_BROWSER"
"""Set (CI does) to make a missing browser fail the test instead of skipping it."""

# Runs in the page before its own content: collects CSP violations and failed resource loads (error events of
# elements do not bubble, so the listener captures them at the window).
_WATCH = """
window.__violations = [];
window.__failed = [];
document.addEventListener('securitypolicyviolation', e => window.__violations.push(
    {directive: e.violatedDirective, blocked: String(e.blockedURI).slice(0, 80), sample: e.sample}));
window.addEventListener('error', e => {
    const t = e.target;
    const src = t && (t.src || (t.href && t.href.baseVal) || '');
    if (t && t !== window) window.__failed.push(t.tagName + ' ' + String(src).slice(0, 80));
}, true);
"""

# Every image of the page, HTML <img> and SVG <image> alike, decoded again in the page's own document (so under its
# CSP): its href/src, whether it decoded and its natural size.
_IMAGES = """
(async () => {
  const out = [];
  const nodes = [...document.querySelectorAll('img, image')];
  for (const n of nodes) {
    const src = n.tagName.toLowerCase() === 'img' ? n.currentSrc || n.src : (n.href && n.href.baseVal) || '';
    const probe = new Image();
    probe.src = src;
    let ok = true;
    try { await probe.decode(); } catch (e) { ok = false; }
    out.push({tag: n.tagName, src: src.slice(0, 40), decoded: ok, width: probe.naturalWidth,
              height: probe.naturalHeight, complete: n.tagName.toLowerCase() === 'img' ? n.complete : null,
              own_width: n.tagName.toLowerCase() === 'img' ? n.naturalWidth : null});
  }
  return out;
})()
"""


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageReport:
    """What the browser saw: CSP violations, failed loads, console errors, every image, a screenshot."""

    violations: list[dict[str, Any]]
    failed_loads: list[str]
    console_errors: list[str]
    images: list[dict[str, Any]]
    screenshot: bytes = b""
    dom_text: str = field(default="", repr=False)
    title: str = ""


class DevTools:
    """One Chromium process and a synchronous request/response loop over its DevTools pipe."""

    def __init__(self, executable: str, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="ragtriage-chromium-")
        read_end, self._to_browser = os.pipe()
        self._from_browser, write_end = os.pipe()
        # The child must see the pipes as fds 3 and 4. bash moves them there (no preexec_fn, which is unsafe
        # once the test has started threads); the ends are first moved above 9 so that "3<&r 4>&w" cannot clobber
        # one with the other.
        to_browser_r, from_browser_w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (read_end, write_end))
        os.close(read_end)
        os.close(write_end)
        args = [
            "/bin/bash",  # dash reads only one-digit descriptors in a redirection
            "-c",
            f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-',
            executable,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--hide-scrollbars",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]
        # Chromium writes crash reports and dconf settings under HOME: keep them in the throw-away profile
        home = {"HOME": self._profile, "XDG_CONFIG_HOME": self._profile, "XDG_CACHE_HOME": self._profile}
        self.proc = subprocess.Popen(
            args,
            env={**os.environ, **home},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_browser_r, from_browser_w),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium's DevTools pipe")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium closed its DevTools pipe (exit code {self.proc.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its answer; events that arrive meanwhile are kept in ``events``."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self.events.append(answer)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        """The first event ``method`` of ``session`` (already received or still to come)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> DevTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_page(path: Path, executable: str, *, width: int = 1200) -> PageReport:
    """Load ``path`` (a local HTML file) in headless Chromium and report what its CSP blocked and its images."""
    with DevTools(executable) as dt:
        target = dt.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = dt.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            dt.send(domain, session=session)
        dt.send("Page.addScriptToEvaluateOnNewDocument", {"source": _WATCH}, session=session)
        dt.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        dt.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        dt.wait_for("Page.loadEventFired", session)

        def evaluate(expression: str) -> Any:
            answer = dt.send(
                "Runtime.evaluate",
                {"expression": expression, "awaitPromise": True, "returnByValue": True},
                session=session,
            )
            if "exceptionDetails" in answer:
                raise RuntimeError(f"page script failed: {answer['exceptionDetails']}")
            return answer["result"].get("value")

        images = evaluate(_IMAGES)
        violations = evaluate("window.__violations")
        failed = evaluate("window.__failed")
        text = evaluate("document.body.innerText")
        title = evaluate("document.title")
        height = int(evaluate("Math.ceil(document.documentElement.scrollHeight)"))
        dt.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": min(height, 16000), "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        shot = dt.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        console = [
            str(e["params"]["entry"].get("text", ""))
            for e in dt.events
            if e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"
        ]
        console += [
            " ".join(str(a.get("value", "")) for a in e["params"].get("args", []))
            for e in dt.events
            if e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error"
        ]
        return PageReport(violations, failed, console, images, base64.b64decode(shot), text, title)
