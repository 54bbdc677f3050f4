"""The playground page in a real browser: Debian's chromium, headless,
driven over the DevTools protocol on a pipe (playground_browser.py). It
loads the page from the server and checks, against scalar references and
the page's own geometry:

  - the seed's TXOR on a2a3: the result cells (a scalar XOR), the inputs
    beside it, the tmp (a scalar OR), the four micro-op steps, hex;
  - the layout, at 1400 and 800 px, all three targets, decimal and hex:
    three cards in one row at 1400 px, stacked at 800, no element of a
    card's content beyond its card (a scrolling box clips what it holds),
    no horizontal scroll of the page; a full-page screenshot at each width
    (test outputs, and $PLAYGROUND_SCREENSHOT_DIR when set);
  - the valid region marked and padding shown as padding;
  - errors in place: a tiles-JSON error clears the results and marks the
    tiles box; a bad tile value marks its line in the tiles box, not the
    program; a target that refuses says so in its own card;
  - JSON mode: examples/alias.json runs on a5 (the job's target) by
    default, a target chosen against it is said in the card; the buffer
    picture has one label per tile and the aliased pair in two lanes, both
    visible; bound tiles marked as bound;
  - the timelines share one scale (bar widths proportional to times
    across cards);
  - the URL fragment restores a job on a fresh load and sends nothing
    until Run; a large result is named, not drawn; Ctrl+Enter runs;
  - no script error on the page all along.

How the results read (playground_reading.py) runs here too, in a browser
of its own."""

import json
import os
import unittest

from playground_browser import OVERFLOW, PlaygroundCase, png_pixels_vary
import playground_reading


class PlaygroundTest(PlaygroundCase):
    def test_1_txor_on_a2a3_shows_inputs_result_tmp_steps_map_and_trace(self):
        self.asm_example("txor")
        self.set_value("format", "dec")
        self.run_page("a2a3")
        scope = "#results .result[data-target=a2a3]"
        self.assertIn("done", self.js(
            f"document.querySelector('{scope} .status').textContent"))
        self.assertEqual(self.cells(scope, "input", "src0"),
                         [str(i + 1) for i in range(32)])
        self.assertEqual(self.cells(scope, "input", "src1"), ["3"] * 32)
        self.assertEqual(self.cells(scope, "output", "dst"),
                         [str((i + 1) ^ 3) for i in range(32)])
        # The seed's a2a3 TXOR: tmp = src0 | src1.
        self.assertEqual(self.cells(scope, "tmp", "dst.tmp"),
                         [str((i + 1) | 3) for i in range(32)])
        steps = self.js(f"[...document.querySelectorAll('{scope} li.step')]"
                        ".map(li => li.textContent.split(' ')[0])")
        self.assertEqual(steps, ["vor", "vand", "vnot", "vand"])
        labels = self.js(
            f"[...document.querySelectorAll('{scope} svg.ubmap g.ubrow')]"
            ".map(r => [...r.querySelectorAll('text.label')]"
            ".map(t => t.textContent))")
        self.assertEqual([sorted(row) for row in labels],
                         [["dst", "dst.tmp", "src0", "src1"]])
        keys = self.js(f"[...document.querySelectorAll('{scope} .ub-key')]"
                       ".map(k => k.textContent)")
        self.assertEqual(len(keys), 4, keys)
        self.assertTrue(all("bytes at [0x" in k and "placed by the server" in k
                            for k in keys), keys)
        trace = json.loads(self.js(
            f"fetch(document.querySelector('{scope} a.trace').href)"
            ".then(r => r.text())"))
        slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        self.assertEqual([e["name"] for e in slices], ["queue", "TXOR"])
        self.set_value("format", "hex")
        self.assertEqual(self.cells(scope, "output", "dst")[0], "0x0002")
        self.set_value("format", "dec")
        # One self-contained page: nothing it names is fetched from
        # elsewhere (links are the page's own blobs).
        outside = self.js(
            "[...document.querySelectorAll('[src], [href]')].map(e => "
            "e.getAttribute('src') || e.getAttribute('href')).filter(u => "
            "!u.startsWith('blob:') && !u.startsWith('#'))")
        self.assertEqual(outside, [])

    def test_2_three_targets_fit_at_1400_and_stack_at_800(self):
        measured = {}
        try:
            for px in (1400, 800):
                self.width(px)
                self.asm_example("tand")
                for fmt in ("hex", "dec"):
                    self.set_value("format", fmt)
                    self.run_page("all", count=3)
                    for target, steps in (("host", ["and"]),
                                          ("a2a3", ["vand"]),
                                          ("a5", ["vand"])):
                        scope = f"#results .result[data-target={target}]"
                        got = self.js(
                            f"[...document.querySelectorAll('{scope} "
                            "li.step')].map(li => li.textContent"
                            ".split(' ')[0])")
                        self.assertEqual(got, steps, target)
                        want = [((i * 37) & 255) & 15 for i in range(64)]
                        self.assertEqual(
                            self.cells(scope, "output", "dst"),
                            [f"0x{v:02x}" if fmt == "hex" else str(v)
                             for v in want], target)
                    self.assertEqual(self.js(OVERFLOW), [], f"{px} px {fmt}")
                    page = self.js(
                        "[document.documentElement.scrollWidth, "
                        "document.documentElement.clientWidth]")
                    self.assertLessEqual(page[0], page[1],
                                         f"{px} px {fmt}: the page scrolls")
                    tops = self.js(
                        "[...document.querySelectorAll('#results "
                        "section.result')].map(c => Math.round("
                        "c.getBoundingClientRect().top))")
                    if px == 1400:
                        self.assertEqual(len(set(tops)), 1, tops)
                    else:
                        self.assertEqual(tops, sorted(set(tops)), tops)
                    measured[(px, fmt)] = tops
                # The picture: the seed's TXOR on every target (a2a3's
                # tmp and four steps beside host's and a5's one).
                self.asm_example("txor")
                self.run_page("all", count=3)
                self.assertEqual(self.js(OVERFLOW), [], f"{px} px TXOR")
                shot = self.full_page()
                self.assertTrue(png_pixels_vary(shot), "blank screenshot")
                for out in (os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR"),
                            os.environ.get("PLAYGROUND_SCREENSHOT_DIR")):
                    if out:
                        with open(os.path.join(out, f"playground-{px}.png"),
                                  "wb") as f:
                            f.write(shot)
        finally:
            self.width(1400)
        print(f"card tops by width and format: {measured}")

    def test_3_the_valid_region_is_marked(self):
        self.asm_example("txor")
        tiles = json.loads(self.js("document.getElementById('tiles').value"))
        for tile in tiles.values():
            tile["valid_cols"] = 12
        self.set_value("tiles", json.dumps(tiles, indent=1))
        self.run_page("host")
        scope = "#results .result[data-target=host]"
        for role, tile in (("input", "src0"), ("input", "src1"),
                           ("output", "dst")):
            self.assertEqual(len(self.cells(scope, role, tile)), 24, tile)
            self.assertEqual(len(self.cells(scope, role, tile, "pad")), 8,
                             tile)
        # dst's padding is the zeros of the tile the server allocated.
        self.assertEqual(self.cells(scope, "output", "dst", "pad"), ["0"] * 8)
        self.assertEqual(self.cells(scope, "output", "dst")[:12],
                         [str((i + 1) ^ 3) for i in range(12)])

    def test_4_a_tiles_json_error_clears_the_results_and_marks_its_box(self):
        self.asm_example("txor")
        self.run_page("a2a3")
        text = self.js("document.getElementById('tiles').value")
        broken = text.replace('"src1"', '"src1', 1)
        self.set_value("tiles", broken)
        self.js("document.getElementById('run').click()")
        self.browser.wait("!!document.querySelector('#tiles-marks .line.bad')",
                          "the tiles box marked")
        self.assertEqual(self.js(
            "document.querySelectorAll('#results section.result').length"),
            0)
        self.assertTrue(self.js(
            "document.getElementById('tiles').classList.contains('bad')"))
        self.assertEqual(self.js(
            "document.querySelectorAll('#program-marks *').length"), 0)
        line = int(self.js(
            "document.querySelector('#tiles-marks .line.bad').dataset.line"))
        self.assertEqual(line, broken[:broken.index('"src1:')].count("\n")
                         + 1)

    def test_5_a_bad_tile_value_is_marked_in_the_tiles_box(self):
        self.asm_example("txor")
        tiles = json.loads(self.js("document.getElementById('tiles').value"))
        tiles["src1"]["fill"] = 300000
        text = json.dumps(tiles, indent=1)
        self.set_value("tiles", text)
        self.run_page("a2a3")
        message = self.browser.wait(
            "document.querySelector('#tiles-marks .message')?.textContent",
            "the tiles box marked")
        self.assertIn('tile "src1": fill = 300000', message)
        line = int(self.js(
            "document.querySelector('#tiles-marks .line.bad').dataset.line"))
        src1 = text.index('"src1"')
        self.assertEqual(line, text[:text.index('"fill"', src1)].count("\n")
                         + 1)
        self.assertEqual(self.js(
            "document.querySelectorAll('#program-marks *').length"), 0)
        self.assertIn("fill = 300000", self.js(
            "document.querySelector('#results .result .error').textContent"))

    def test_6_each_target_refuses_in_its_own_card(self):
        self.asm_example("txor")
        tiles = json.loads(self.js("document.getElementById('tiles').value"))
        for tile in tiles.values():  # 16-byte rows: a2a3 and a5 refuse
            tile["cols"] = 8
            if "values" in tile:
                tile["values"] = tile["values"][:16]
        self.set_value("tiles", json.dumps(tiles, indent=1))
        self.run_page("all", count=3)
        host = "#results .result[data-target=host]"
        self.assertEqual(self.cells(host, "output", "dst"),
                         [str((i + 1) ^ 3) for i in range(16)])
        self.assertIsNone(self.js(f"document.querySelector('{host} .error')"))
        for target in ("a2a3", "a5"):
            error = self.js("document.querySelector('#results .result"
                            f"[data-target={target}] .error').textContent")
            self.assertIn(f"(TXOR on {target})", error)
            self.assertIn("rows of a multiple of 32 bytes", error)
        self.assertEqual(self.js("document.getElementById('error')"
                                 ".textContent"), "")
        self.assertIn("Ran on host; refused on a2a3 and a5", self.js(
            "document.getElementById('summary').textContent"))

    def test_7_alias_json_runs_where_it_says_with_both_tiles_visible(self):
        self.js("document.getElementById('ex-alias').click()")
        self.assertEqual(self.js("document.getElementById('target').value"),
                         "job")
        self.run_page()
        scope = "#results .result[data-target=a5]"
        self.assertEqual(self.cells(scope, "output", "d"), ["2"] * 256)
        self.assertEqual(self.cells(scope, "output", "a"), ["1"] * 256)
        self.assertEqual(self.cells(scope, "input", "a"), ["5"] * 256)
        self.assertIsNone(self.js(f"document.querySelector('{scope} .notice')"))
        # e0: c is bound to a's bytes. Both drawn, in lanes of their own,
        # each with one label.
        boxes = self.js(
            f"[...document.querySelectorAll('{scope} g.ubrow[data-event=e0] "
            "g.ubtile')].map(g => { const r = g.querySelector('rect')"
            ".getBoundingClientRect(); return [g.dataset.tile, r.left, r.top,"
            " r.width, r.height, g.querySelectorAll('text.label').length]; })")
        by_tile = {b[0]: b for b in boxes}
        self.assertEqual(sorted(by_tile), ["a", "b", "c"])
        a, c = by_tile["a"], by_tile["c"]
        print(f"alias e0: a at x={a[1]:.1f} y={a[2]:.1f} w={a[3]:.1f}, "
              f"c at x={c[1]:.1f} y={c[2]:.1f} w={c[3]:.1f}")
        self.assertAlmostEqual(a[1], c[1], delta=0.5)  # same addresses
        self.assertGreaterEqual(abs(a[2] - c[2]), a[4])  # stacked lanes
        for b in boxes:
            self.assertGreater(b[3], 20, b)
            self.assertEqual(b[5], 1, b)
        keys = self.js(f"[...document.querySelectorAll('{scope} .ub-key')]"
                       ".map(k => k.textContent)")
        self.assertIn("a: 1024 bytes at [0x0, 0x400), bound (manual mode)",
                      keys)
        self.assertTrue(any(k.startswith("d: ") and "placed by the server"
                            in k for k in keys), keys)
        ticks = self.js(f"[...document.querySelectorAll('{scope} svg.ubmap "
                        "text.tick')].map(t => t.textContent)")
        self.assertIn("0x0", ticks)
        self.assertGreaterEqual(len(ticks), 3, ticks)
        # A target chosen against the job's is said in the card.
        self.run_page("host")
        notice = self.js("document.querySelector('#results .result"
                         "[data-target=host] .notice').textContent")
        self.assertIn("names TARGET_A5; this ran on host", notice)

    def test_8_the_timelines_share_one_scale(self):
        self.asm_example("txor")
        self.run_page("all", count=3)
        scales = self.js(
            "[...document.querySelectorAll('#results svg.timeline')]"
            ".map(s => +s.dataset.usPerPx)")
        self.assertEqual(len(scales), 3)
        self.assertEqual(len(set(scales)), 1, scales)
        bars = self.js(
            "[...document.querySelectorAll('#results svg.timeline rect')]"
            ".map(r => [+r.dataset.us, r.getBoundingClientRect().width])")
        for us, px in bars:
            if us / scales[0] >= 1:
                self.assertAlmostEqual(px, us / scales[0], delta=1.0)
        print(f"timeline: {scales[0]:.4f} us a px on every card; bars "
              f"(us, px): {[(round(u, 1), round(p, 1)) for u, p in bars]}")
        legend = self.js("document.querySelector('#results .timeline-box "
                         ".legend').textContent")
        self.assertIn("queued", legend)
        self.assertIn("running", legend)
        self.assertTrue(self.js("[...document.querySelectorAll('#results "
                                "svg.timeline text.tick')].some(t => "
                                "t.textContent.endsWith(' us'))"))

    def test_9_the_url_fragment_reproduces_a_run(self):
        self.asm_example("tand")
        program = self.js("document.getElementById('program').value")
        program = program.replace("pto.tand", "pto.txor")
        self.set_value("program", program)
        self.set_value("format", "hex")
        self.run_page("a5")
        state = self.js("location.hash")
        self.assertTrue(state.startswith("#"))
        self.browser.navigate("about:blank")
        self.browser.wait("location.href === 'about:blank'", "a blank page")
        jobs = self.jobs_answered()
        self.browser.navigate(self.url + "/" + state)
        # A link restores its job and waits: nothing is sent until Run.
        self.browser.wait("!!document.getElementById('restored')",
                          "the restored job")
        self.assertEqual(self.js("document.getElementById('program').value"),
                         program)
        self.assertIn("nothing has been sent",
                      self.js("document.getElementById('restored')"
                              ".textContent"))
        self.assertEqual(self.js("document.querySelectorAll('#results "
                                 "section.result').length"), 0)
        self.assertEqual(self.jobs_answered(), jobs)
        self.run_page()
        self.assertEqual(self.jobs_answered(), jobs + 1)
        scope = "#results .result[data-target=a5]"
        self.assertEqual(self.cells(scope, "output", "dst"),
                         [f"0x{((i * 37) & 255) ^ 15:02x}" for i in range(64)])
        self.set_value("format", "dec")

    def test_9a_a_large_result_is_named_not_drawn(self):
        # A 256x256 TAND with 300 instructions: its tiles are named with
        # their size, not drawn as 65,536 cells each, and its first 256
        # events are drawn.
        job = {"target": "TARGET_HOST", "tiles": {
            name: {"dtype": "DTYPE_INT32", "rows": 256, "cols": 256,
                   "fill": fill} for name, fill in (("a", 6), ("b", 3))},
            "instructions": [{"opcode": "OPCODE_TAND", "dst": "c",
                              "src0": "a", "src1": "b"}] * 300,
            "outputs": ["c"]}
        if self.js("document.querySelector('input[name=mode]:checked')"
                   ".value") != "json":
            self.js("document.querySelector('input[name=mode][value=json]')"
                    ".click()")
        self.set_value("program", json.dumps(job))
        self.run_page("job")
        scope = "#results .result"
        self.assertEqual(self.js(f"document.querySelectorAll('{scope} "
                                 "table.tile').length"), 0)
        named = self.js(f"[...document.querySelectorAll('{scope} "
                        ".notice[data-tile]')].map(n => n.textContent)")
        self.assertEqual(len(named), 3, named)
        self.assertTrue(all("65536 elements, too many to draw" in n
                            for n in named), named)
        self.assertIn("The first 256 of 300 instructions", self.js(
            "document.getElementById('events-cut').textContent"))
        self.assertEqual(self.js(f"document.querySelectorAll('{scope} "
                                 "table.events tr').length"), 1 + 256)

    def test_9b_ctrl_enter_runs(self):
        self.asm_example("txor")
        self.set_value("target", "host")
        self.js("document.getElementById('results').replaceChildren()")
        self.js("document.getElementById('program').focus();"
                "document.getElementById('program').dispatchEvent(new "
                "KeyboardEvent('keydown', {key: 'Enter', ctrlKey: true, "
                "bubbles: true}))")
        self.browser.wait("document.querySelectorAll('#results "
                          "section.result[data-target=host]').length === 1",
                          "a run from Ctrl+Enter")


def load_tests(loader, tests, pattern):
    """This file's tests, then how the results read."""
    tests.addTests(loader.loadTestsFromModule(playground_reading))
    return tests


if __name__ == "__main__":
    unittest.main()
