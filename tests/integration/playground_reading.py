"""How the playground's results read, in a browser (playground_browser.py;
playground_test runs these beside its own):

  1. the grids of a card share one column width, so that element (i, j)
     of src0, src1 and dst stand at one x: at 1400 and 800 px, in decimal
     and hex;
  2. the valid-region and padding swatches are filled as the cells they
     name, not empty boxes;
  3. the events table: each cell one line at 1400 and 800 px, text columns
     left and numbers right, each heading as its column;
  4. the buffer legend lists the tiles in the order the bars show them;
  5. a refusal says its code once and its position once, in a card as
     tall as what it says;
  6. an error about a tile's row width or shape marks the tiles, at that
     tile; an error about the program marks the program;
  7. the hint before a run says what is true of the editor;
  8. a tile bound onto another's bytes (examples/alias.json) shows those
     bytes, and says so;
  9. a wait between two instructions is drawn on the timeline, on its
     scale, where the record puts it, and labelled;
 10. a job's JSON is read as the server reads it: trailing commas, and
     enum names in any case ("A2A3", "Int16", "TXOR"), run and draw as
     the canonical names do."""

import calendar
import json
import re
import time

from playground_browser import PlaygroundCase

# Per result card, its grids' first rows: [target, [[tile, [[left,
# width] per cell]] per grid]].
GRID_COLUMNS = """
[...document.querySelectorAll('#results section.result')].map(card =>
  [card.dataset.target, [...card.querySelectorAll('table.tile')].map(t =>
    [t.dataset.tile, [...t.rows[0].cells].map(td => {
      const r = td.getBoundingClientRect(); return [r.left, r.width]; })])])
"""

# The events tables: each cell's text (each step of the steps' column) that
# takes more than one line, and per column its heading, the heading's
# alignment and its cells'.
EVENTS_TABLE = """
(() => {
  const lines = node => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return new Set([...range.getClientRects()].filter(r => r.width > 0)
      .map(r => Math.round(r.top))).size;
  };
  const out = {wrapped: [], columns: []};
  for (const t of document.querySelectorAll('#results table.events')) {
    const [head, ...rows] = t.rows;
    [...head.cells].forEach((th, j) => out.columns.push([th.textContent,
      getComputedStyle(th).textAlign,
      [...new Set(rows.map(r => getComputedStyle(r.cells[j]).textAlign))]]));
    for (const r of rows) for (const td of r.cells) {
      const steps = td.querySelectorAll('li');
      for (const text of steps.length ? steps : [td]) {
        if (lines(text) !== 1) out.wrapped.push(text.textContent);
      }
    }
  }
  return out;
})()
"""

# The order the bars of a card's buffer picture show its tiles in: rows
# down, in a row by address (x), then lane (y); each tile once.
BAR_ORDER = """
(scope => {
  const order = [];
  for (const row of document.querySelectorAll(scope + ' svg.ubmap g.ubrow')) {
    const bars = [...row.querySelectorAll('g.ubtile')].map(g => {
      const r = g.querySelector('rect').getBoundingClientRect();
      return [Math.round(r.left * 10), Math.round(r.top * 10), g.dataset.tile];
    }).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [, , tile] of bars) if (!order.includes(tile)) order.push(tile);
  }
  return order;
})
"""

# A two-instruction job on host whose second waits on the first's event.
WAITING_JOB = {
    "target": "TARGET_HOST",
    "tiles": {"a": {"dtype": "DTYPE_INT16", "rows": 2, "cols": 16,
                    "fill": 5},
              "b": {"dtype": "DTYPE_INT16", "rows": 2, "cols": 16,
                    "fill": 3}},
    "instructions": [{"opcode": "OPCODE_TAND", "dst": "c", "src0": "a",
                      "src1": "b"},
                     {"opcode": "OPCODE_TXOR", "dst": "d", "src0": "c",
                      "src1": "b", "wait_events": ["e0"]}],
    "outputs": ["d"]}


def stamp_ns(stamp):
    """An RFC 3339 time in UTC ("...T15:18:15.532615420Z") as integer
    nanoseconds since the epoch."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return seconds * 10**9 + int((fraction + "000000000")[:9])


class ReadingTest(PlaygroundCase):
    def json_job(self, job):
        if self.js("document.querySelector('input[name=mode]:checked')"
                   ".value") != "json":
            self.js("document.querySelector('input[name=mode][value=json]')"
                    ".click()")
        self.set_value("program", json.dumps(job, indent=1))

    def narrow_txor_tiles(self):
        """The seed's TXOR with 8-column int16 tiles: 16-byte rows, which
        a2a3 and a5 refuse; the tiles' text."""
        self.asm_example("txor")
        tiles = json.loads(self.js("document.getElementById('tiles').value"))
        for tile in tiles.values():
            tile["cols"] = 8
            if "values" in tile:
                tile["values"] = tile["values"][:16]
        text = json.dumps(tiles, indent=1)
        self.set_value("tiles", text)
        return text

    def test_1_the_grids_of_a_card_share_their_columns(self):
        try:
            for px in (1400, 800):
                self.width(px)
                self.asm_example("txor")
                for fmt in ("dec", "hex"):
                    self.set_value("format", fmt)
                    self.run_page("all", count=3)
                    for target, grids in self.js(GRID_COLUMNS):
                        where = f"{px} px {fmt} {target}"
                        self.assertGreaterEqual(len(grids), 3, where)
                        first = grids[0][1]
                        for tile, cells in grids[1:]:
                            for j, (left, width) in enumerate(cells):
                                self.assertAlmostEqual(
                                    left, first[j][0], delta=0.5,
                                    msg=f"{where}: {tile} column {j}")
                                self.assertAlmostEqual(
                                    width, first[j][1], delta=0.5,
                                    msg=f"{where}: {tile} column {j}")
        finally:
            self.set_value("format", "dec")
            self.width(1400)

    def test_2_the_legend_swatches_are_filled_as_the_cells(self):
        self.asm_example("txor")
        tiles = json.loads(self.js("document.getElementById('tiles').value"))
        for tile in tiles.values():
            tile["valid_cols"] = 12
        self.set_value("tiles", json.dumps(tiles, indent=1))
        self.run_page("host")
        colours = self.js(
            "(() => { const card = document.querySelector('#results "
            "section.result'); const bg = s => getComputedStyle("
            "card.querySelector(s)).backgroundColor; return {valid: bg("
            "'.legend .swatch.valid'), padding: bg('.legend "
            ".swatch.padding'), cell: bg('table.tile td.cell'), pad: "
            "bg('table.tile td.pad')}; })()")
        self.assertEqual(colours["valid"], colours["cell"], colours)
        self.assertEqual(colours["padding"], colours["pad"], colours)
        self.assertNotEqual(colours["valid"], colours["padding"], colours)
        for swatch in ("valid", "padding"):
            self.assertNotIn(colours[swatch],
                             ("rgba(0, 0, 0, 0)", "rgb(255, 255, 255)"),
                             swatch)

    def test_3_each_events_cell_is_one_line_aligned_as_its_heading(self):
        try:
            for px in (1400, 800):
                self.width(px)
                self.asm_example("txor")
                self.run_page("all", count=3)
                table = self.js(EVENTS_TABLE)
                self.assertEqual(table["wrapped"], [], f"{px} px")
                self.assertEqual(len(table["columns"]), 3 * 5)
                for heading, align, cells in table["columns"]:
                    want = ("right" if heading in ("queued", "ran")
                            else "left")
                    self.assertEqual((align, cells), (want, [want]),
                                     f"{px} px: {heading}")
        finally:
            self.width(1400)

    def test_4_the_buffer_legend_lists_tiles_as_the_bars_show_them(self):
        self.asm_example("txor")
        self.run_page("a2a3")
        scope = "#results .result[data-target=a2a3]"
        legend = "[...document.querySelectorAll('{} .ub-key')]" \
            ".map(k => k.dataset.tile)"
        bars = self.js(f"({BAR_ORDER})('{scope}')")
        self.assertEqual(sorted(bars), ["dst", "dst.tmp", "src0", "src1"])
        self.assertEqual(self.js(legend.format(scope)), bars)
        self.js("document.getElementById('ex-alias').click()")
        self.run_page()
        scope = "#results .result[data-target=a5]"
        bars = self.js(f"({BAR_ORDER})('{scope}')")
        self.assertEqual(sorted(bars), ["a", "b", "c", "d"])
        self.assertEqual(self.js(legend.format(scope)), bars)

    def test_5_a_refusal_is_said_once_in_a_card_of_its_size(self):
        self.narrow_txor_tiles()
        self.run_page("all", count=3)
        cards = self.js(
            "Object.fromEntries([...document.querySelectorAll('#results "
            "section.result')].map(c => [c.dataset.target, [c.textContent, "
            "c.getBoundingClientRect().height]]))")
        for target in ("a2a3", "a5"):
            text, height = cards[target]
            self.assertEqual(text.count("INVALID_ARGUMENT"), 1, text)
            self.assertEqual(len(re.findall(r"\d+:\d+: ", text)), 1, text)
            self.assertLess(height, 0.4 * cards["host"][1], target)
        # A mistake in the program, refused alike by every target: marked
        # once, in the program, its place said once.
        self.asm_example("txor")
        program = self.js("document.getElementById('program').value")
        self.set_value("program", program.replace("%src0,", "%src0", 1))
        self.run_page("all", count=3)
        marks = self.js("[...document.querySelectorAll('.marks .message')]"
                        ".map(m => [m.parentElement.id, m.textContent])")
        self.assertEqual(len(marks), 1, marks)
        box, message = marks[0]
        self.assertEqual(box, "program-marks")
        self.assertRegex(message, r"^line 2, column \d+: expected ','")
        self.assertNotRegex(message, r"\d+:\d+: ")
        self.assertFalse(self.js(
            "document.getElementById('tiles').classList.contains('bad')"))
        for text in self.js("[...document.querySelectorAll('#results "
                            "section.result')].map(c => c.textContent)"):
            self.assertEqual(text.count("INVALID_ARGUMENT"), 1, text)

    def test_6_a_tile_shape_error_marks_the_tile_not_the_program(self):
        # a2a3's row width: dst "dst" (the server's, shaped like src0) has
        # 16-byte rows; the fix is src0's cols.
        text = self.narrow_txor_tiles()
        self.run_page("a2a3")
        self.browser.wait("!!document.querySelector('#tiles-marks .line.bad')",
                          "the tiles box marked")
        message = self.js(
            "document.querySelector('#tiles-marks .message').textContent")
        self.assertIn('dst "dst" rows are 16 bytes', message)
        self.assertIn('shaped like src0 "src0"', message)
        self.assertNotRegex(message, r"\d+:\d+: ")
        line = int(self.js(
            "document.querySelector('#tiles-marks .line.bad').dataset.line"))
        src0 = text.index('"src0"')
        self.assertEqual(line, text[:text.index('"cols"', src0)].count("\n")
                         + 1)
        self.assertFalse(self.js(
            "document.getElementById('program').classList.contains('bad')"))
        self.assertEqual(self.js(
            "document.querySelectorAll('#program-marks *').length"), 0)
        # A JSON job: the tile the message names, at the field to fix.
        job = {"target": "TARGET_A2A3", "tiles": {
            "a": {"dtype": "DTYPE_INT16", "rows": 2, "cols": 16, "fill": 5},
            "b": {"dtype": "DTYPE_INT16", "rows": 2, "cols": 16, "fill": 3,
                  "valid_cols": 8}},
            "instructions": [{"opcode": "OPCODE_TAND", "dst": "c",
                              "src0": "a", "src1": "b"}]}
        self.json_job(job)
        self.run_page("job")
        message = self.browser.wait(
            "document.querySelector('#program-marks .message')?.textContent",
            "the job marked")
        self.assertIn("src1 valid shape 2x8 differs", message)
        text = self.js("document.getElementById('program').value")
        line = int(self.js(
            "document.querySelector('#program-marks .line.bad').dataset.line"))
        self.assertEqual(line, text[:text.index('"valid_cols"')].count("\n")
                         + 1)

    def test_7_the_hint_says_what_is_true_of_the_editor(self):
        self.browser.navigate("about:blank")
        self.browser.wait("location.href === 'about:blank'", "a blank page")
        self.browser.navigate(self.url + "/")
        hint = self.browser.wait(
            "document.readyState === 'complete' && "
            "document.getElementById('hint')?.textContent", "the hint")
        self.assertNotEqual(self.js(
            "document.getElementById('program').value.trim()"), "")
        self.assertNotIn("Pick an example", hint)
        self.assertIn("Run (Ctrl+Enter)", hint)
        self.js("(() => { const p = document.getElementById('program');"
                " p.value = ''; p.dispatchEvent(new Event('input')); })()")
        self.assertEqual(self.js(
            "document.getElementById('hint').textContent"),
            "Pick an example and run it.")
        self.js("document.getElementById('ex-tand').click()")
        self.assertIn("Run (Ctrl+Enter)", self.js(
            "document.getElementById('hint').textContent"))

    def test_8_a_tile_bound_onto_another_shows_its_bytes(self):
        self.js("document.getElementById('ex-alias').click()")
        for fmt in ("dec", "hex"):
            self.set_value("format", fmt)
            self.run_page()
            scope = "#results .result[data-target=a5]"
            a = self.cells(scope, "input", "a")
            self.assertEqual(a, ["5" if fmt == "dec" else "0x00000005"]
                             * 256)
            self.assertEqual(self.cells(scope, "input", "c"), a, fmt)
        self.set_value("format", "dec")
        caption = self.js(f"document.querySelector('{scope} table.tile.input"
                          "[data-tile=c] caption').textContent")
        self.assertIn("c input, bound onto a's bytes", caption)
        self.assertIn("input, as sent", self.js(
            f"document.querySelector('{scope} table.tile.input[data-tile=a] "
            "caption').textContent"))

    def test_9_a_wait_is_drawn_on_the_timeline_scale(self):
        self.json_job(WAITING_JOB)
        self.run_page("job")
        e0, e1 = self.js("lastRuns[0].body.events")
        self.assertEqual(e1["waitedOn"], ["e0"])
        wait_us = (stamp_ns(e1["startTime"]) - stamp_ns(e0["endTime"])) / 1e3
        self.assertGreater(wait_us, 0)
        drawn = self.js(
            "(() => { const s = document.querySelector('#results "
            "svg.timeline'); const g = s.querySelector('g.wait'); if (!g) "
            "return null; const box = e => e.getBoundingClientRect(); const "
            "r = g.querySelector('rect'); return {scale: +s.dataset.usPerPx,"
            " us: +r.dataset.us, left: box(r).left, width: box(r).width, "
            "after: g.dataset.after, label: g.querySelector('text')"
            ".textContent, ran: [...s.querySelectorAll('rect.ran')].map(b =>"
            " box(b).right)}; })()")
        print(f"wait: {wait_us:.3f} us, drawn {drawn}")
        self.assertIsNotNone(drawn, "no wait drawn")
        self.assertEqual(drawn["after"], "e0")
        self.assertAlmostEqual(drawn["us"], wait_us, delta=1e-3)
        self.assertAlmostEqual(drawn["width"], wait_us / drawn["scale"],
                               delta=1.0)
        # From e0's end.
        self.assertAlmostEqual(drawn["left"], drawn["ran"][0], delta=1.0)
        self.assertTrue(drawn["label"].startswith("wait "), drawn["label"])
        self.assertIn("waiting", self.js(
            "document.querySelector('#results .timeline-box .legend')"
            ".textContent"))

    def test_10_json_is_read_as_the_server_reads_it(self):
        text = ('{"target": "A2A3",\n'
                ' "tiles": {"a": {"dtype": "Int16", "rows": 1, "cols": 16,'
                ' "fill": 12,},\n'
                '           "b": {"dtype": "int16", "rows": 1, "cols": 16,'
                ' "values": [' + ", ".join(["10"] * 16) + ',],},},\n'
                ' "instructions": [{"opcode": "TXOR", "dst": "c",'
                ' "src0": "a", "src1": "b", "tmp": "t",},],\n'
                ' "outputs": ["c",],}\n')
        self.json_job({})
        self.set_value("program", text)
        self.run_page(target="job")
        scope = "#results .result[data-target=a2a3]"
        self.assertEqual(self.js(f"document.querySelectorAll('{scope}')"
                                 ".length"), 1, "the job's own target")
        self.assertEqual(self.cells(scope, "input", "a"), ["12"] * 16)
        self.assertEqual(self.cells(scope, "input", "b"), ["10"] * 16)
        self.assertEqual(self.cells(scope, "output", "c"), [str(12 ^ 10)] * 16)
        self.assertEqual(self.js("document.getElementById('error')"
                                 ".textContent"), "")
