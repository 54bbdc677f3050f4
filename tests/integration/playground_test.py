"""The playground page in a real browser: Debian's chromium, headless,
driven over the DevTools protocol on a pipe (--remote-debugging-pipe: no
port, no library beyond Python's own). It loads the page from the server,
runs the seed's TXOR on a2a3 and checks the result cells against a scalar
XOR and the four micro-op steps, the buffer map and the Chrome trace, shows
hex, runs all three targets side by side, makes an error and checks the
marked line, and takes a screenshot that must not be blank (written to the
test's outputs, and to $PLAYGROUND_SCREENSHOT when set)."""

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


class PlaygroundTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.url, _ = start()
        cls.dir = tempfile.mkdtemp()
        cls.browser = DevTools(cls.dir)
        cls.browser.open(cls.url + "/")
        cls.browser.wait("document.readyState === 'complete' && "
                         "!!document.getElementById('run')", "the page")

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()
        stop(cls.server)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_page(self, target, count=1):
        b = self.browser
        b.eval(f"document.getElementById('target').value = '{target}'")
        b.eval("document.getElementById('results').replaceChildren()")
        b.eval("document.getElementById('run').click()")
        b.wait(f"document.querySelectorAll('#results section.result')"
               f".length === {count}", f"results on {target}")

    def test_1_txor_on_a2a3_shows_cells_steps_map_and_trace(self):
        b = self.browser
        b.eval("document.getElementById('ex-txor').click()")
        self.run_page("a2a3")
        scope = "#results .result[data-target=a2a3]"
        self.assertIn("done", b.eval(
            f"document.querySelector('{scope} .status').textContent"))
        cells = b.eval(f"[...document.querySelectorAll('{scope} td.cell')]"
                       ".map(td => td.textContent)")
        self.assertEqual(cells, [str((i + 1) ^ 3) for i in range(32)])
        steps = b.eval(f"[...document.querySelectorAll('{scope} li.step')]"
                       ".map(li => li.textContent.split(' ')[0])")
        self.assertEqual(steps, ["vor", "vand", "vnot", "vand"])
        boxes = b.eval(f"[...document.querySelectorAll('{scope} svg.ubmap "
                       "g.ubtile title')].map(t => t.textContent)")
        self.assertEqual(len(boxes), 4, boxes)
        self.assertTrue(any(t.startswith("tmp ") for t in boxes), boxes)
        trace = json.loads(b.eval(
            f"fetch(document.querySelector('{scope} a.trace').href)"
            ".then(r => r.text())"))
        slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        self.assertEqual([e["name"] for e in slices], ["queue", "TXOR"])
        b.eval("document.getElementById('format').value = 'hex';"
               "document.getElementById('format').dispatchEvent("
               "new Event('change'))")
        self.assertEqual(b.eval(
            f"document.querySelector('{scope} td.cell').textContent"),
            "0x0002")
        b.eval("document.getElementById('format').value = 'dec';"
               "document.getElementById('format').dispatchEvent("
               "new Event('change'))")
        shot = base64.b64decode(b.send("Page.captureScreenshot",
                                       {"format": "png"})["data"])
        self.assertTrue(png_pixels_vary(shot), "the screenshot is blank")
        for out in (os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR"),
                    os.environ.get("PLAYGROUND_SCREENSHOT_DIR")):
            if out:
                with open(os.path.join(out, "playground.png"), "wb") as f:
                    f.write(shot)

    def test_2_all_three_targets_side_by_side(self):
        b = self.browser
        b.eval("document.getElementById('ex-tand').click()")
        self.run_page("all", count=3)
        for target, steps in (("host", ["and"]), ("a2a3", ["vand"]),
                              ("a5", ["vand"])):
            scope = f"#results .result[data-target={target}]"
            got = b.eval(f"[...document.querySelectorAll('{scope} li.step')]"
                         ".map(li => li.textContent.split(' ')[0])")
            self.assertEqual(got, steps, target)
            cells = b.eval(f"[...document.querySelectorAll('{scope} "
                           "td.cell')].map(td => td.textContent)")
            self.assertEqual(cells, [str(((i * 37) & 255) & 15)
                                     for i in range(64)], target)

    def test_3_an_error_marks_its_line(self):
        b = self.browser
        b.eval("document.getElementById('ex-txor').click()")
        b.eval("const p = document.getElementById('program');"
               "p.value = p.value.replace('%src1 :', '%srcX :')")
        self.run_page("a2a3")
        line = b.wait("document.querySelector('#marked .line.bad')?.dataset"
                      ".line", "the marked line")
        self.assertEqual(line, "2")
        self.assertTrue(b.eval(
            "document.getElementById('error').textContent")
            .startswith("2:24: %srcX is neither a tile"))
        self.assertIn("^", b.eval(
            "document.querySelector('#marked .caret').textContent"))
        # No script error on the page all along.
        thrown = [e for e in b.events
                  if e.get("method") == "Runtime.exceptionThrown"]
        self.assertEqual(thrown, [])


if __name__ == "__main__":
    unittest.main()
