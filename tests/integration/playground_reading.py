"""How the playground's results read, in a browser (playground_browser.py;
playground_test runs these beside its own):

  1. the grids of a card share one column width, so that element (i, j)
     of src0, src1 and dst stand at one x: at 1400 and 800 px, in decimal
     and hex."""

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
