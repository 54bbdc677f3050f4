"""How the playground's results read, in a browser (playground_browser.py;
playground_test runs these beside its own):

  1. the grids of a card share one column width, so that element (i, j)
     of src0, src1 and dst stand at one x: at 1400 and 800 px, in decimal
     and hex;
  2. the valid-region and padding swatches are filled as the cells they
     name, not empty boxes."""

import json

from playground_browser import PlaygroundCase

# Per result card, its grids' first rows: [target, [[tile, [[left,
# width] per cell]] per grid]].
GRID_COLUMNS = """
[...document.querySelectorAll('#results section.result')].map(card =>
  [card.dataset.target, [...card.querySelectorAll('table.tile')].map(t =>
    [t.dataset.tile, [...t.rows[0].cells].map(td => {
      const r = td.getBoundingClientRect(); return [r.left, r.width]; })])])
"""


class ReadingTest(PlaygroundCase):
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
