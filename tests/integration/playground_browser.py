"""The playground page in a real browser, for its tests: Debian's chromium,
headless, driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: no port, no library beyond Python's own), and
PlaygroundCase, a test case that starts a server and a browser on its page
and drives it (playground_test.py and playground_reading.py)."""

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_api_test import start, stop  # noqa: E402
from server_process import scrape  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BOUND_S = 30


class DevTools:
    """One headless chromium and its DevTools pipe: requests and their
    answers, in order; events are kept for whoever asks."""

    def __init__(self, user_dir):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds():  # the browser reads fd 3 and writes fd 4
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        env = dict(os.environ, HOME=user_dir)
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--remote-debugging-pipe",
             "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--disable-breakpad", "--window-size=1400,1100",
             f"--user-data-dir={user_dir}", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._buffer = b""
        self.events = []
        self.session = None

    def send(self, method, params=None, session=True):
        self._next += 1
        message = {"id": self._next, "method": method,
                   "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            answer = self._read()
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)
        raise TimeoutError(method)

    def _read(self):
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"},
                           session=False)["targetId"]
        self.session = self.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True},
            session=False)["sessionId"]
        self.send("Runtime.enable")
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})

    def navigate(self, url):
        self.send("Page.navigate", {"url": url})

    def eval(self, expression):
        result = self.send("Runtime.evaluate", {
            "expression": expression, "awaitPromise": True,
            "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, what):
        """Until `expression` is truthy in the page; its value."""
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(what)

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def png_pixels_vary(data):
    """Whether a PNG's decoded rows hold more than a few distinct bytes (a
    blank page is one colour)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat))) > 16


# Every element of every result card whose box is not inside its card,
# leaving out what a scrolling box inside the card holds (the scrolling
# box is itself checked): [target, tag, class, how far out in px].
OVERFLOW = """
(() => {
  const out = [];
  for (const card of document.querySelectorAll('#results section.result')) {
    const c = card.getBoundingClientRect();
    for (const e of card.querySelectorAll('*')) {
      let clipped = false;
      for (let a = e.parentElement; a && a !== card; a = a.parentElement) {
        const s = getComputedStyle(a);
        if (s.overflowX !== 'visible' || s.overflowY !== 'visible') { clipped = true; break; }
      }
      if (clipped) continue;
      const r = e.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      const over = Math.max(c.left - r.left, r.right - c.right, c.top - r.top, r.bottom - c.bottom);
      if (over > 0.5) out.push([card.dataset.target, e.tagName, e.getAttribute('class'), Math.round(over)]);
    }
  }
  return out;
})()
"""


class PlaygroundCase(unittest.TestCase):
    """A server, and chromium on its playground at 1400 px; no script
    error on the page all along."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.url, cls.metrics = start()
        cls.dir = tempfile.mkdtemp()
        cls.browser = DevTools(cls.dir)
        cls.browser.open(cls.url + "/")
        cls.browser.wait("document.readyState === 'complete' && "
                         "!!document.getElementById('run')", "the page")
        cls.width(1400)

    @classmethod
    def tearDownClass(cls):
        thrown = [e for e in cls.browser.events
                  if e.get("method") == "Runtime.exceptionThrown"]
        cls.browser.close()
        stop(cls.server)
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert thrown == [], f"script errors on the page: {thrown}"

    @classmethod
    def width(cls, px):
        # No scroll bars: the page's width is the window's, in the checks
        # and in the full-page screenshots alike.
        cls.browser.send("Emulation.setScrollbarsHidden", {"hidden": True})
        cls.browser.send("Emulation.setDeviceMetricsOverride", {
            "width": px, "height": 1000, "deviceScaleFactor": 1,
            "mobile": False})
        cls.browser.wait(f"window.innerWidth === {px}", f"{px} px")

    def full_page(self):
        """A PNG of the whole page at the window's width."""
        size = self.browser.send("Page.getLayoutMetrics")["cssContentSize"]
        return base64.b64decode(self.browser.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"],
                     "height": size["height"], "scale": 1}})["data"])

    def js(self, expression):
        return self.browser.eval(expression)

    def set_value(self, element, value):
        self.js(f"(() => {{ const e = document.getElementById('{element}');"
                f" e.value = {json.dumps(value)};"
                " e.dispatchEvent(new Event('change')); })()")

    def run_page(self, target=None, count=1, click=True):
        if target is not None:
            self.set_value("target", target)
        self.js("document.getElementById('results').replaceChildren()")
        if click:
            self.js("document.getElementById('run').click()")
        self.browser.wait(
            "!document.getElementById('running') && document.querySelectorAll("
            f"'#results section.result').length === {count}", "the results")

    def jobs_answered(self):
        return sum(value for name, value in scrape(self.metrics).items()
                   if name.startswith("ptoserve_jobs_total{"))

    def cells(self, scope, role, tile, kind="cell"):
        return self.js(
            f"[...document.querySelectorAll('{scope} table.tile.{role}"
            f"[data-tile=\"{tile}\"] td.{kind}')].map(td => td.textContent)")

    def asm_example(self, name):
        if self.js("document.querySelector('input[name=mode]:checked')"
                   ".value") != "asm":
            self.js("document.querySelector('input[name=mode][value=asm]')"
                    ".click()")
        self.js(f"document.getElementById('ex-{name}').click()")

