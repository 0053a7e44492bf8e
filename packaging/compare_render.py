"""Whether the bundle's screenshot shows real text: its static labels (menu bar, the Model
summary's row names and column headers) compared pixel by pixel with the same window rendered from
the venv. Missing fonts turn every glyph into a box, which changes most text pixels; the same
fonts change almost none. OCR-free, so it needs no OCR engine.

    python packaging/compare_render.py BUNDLE.png VENV.png
"""

from __future__ import annotations

import sys

import numpy as np
from PIL import Image

# (left, top, right, bottom) of text that is the same in every render of small_cnn at 1400×860
CROPS = {"menu bar": (0, 0, 160, 18), "summary labels": (0, 20, 130, 340)}
LIMIT = 0.02  # share of text-region pixels that may differ by more than 48 grey levels


def differing(a: np.ndarray, b: np.ndarray) -> float:
    return float((np.abs(a.astype(np.int16) - b.astype(np.int16)) > 48).mean())


def main(bundle: str, venv: str) -> int:
    left = np.asarray(Image.open(bundle).convert("L"))
    right = np.asarray(Image.open(venv).convert("L"))
    if left.shape != right.shape:  # boxes are wider than glyphs: the window grew to fit them
        print(f"note: the renders differ in size ({left.shape[::-1]} vs {right.shape[::-1]})")
    worst = 0.0
    for name, (x0, y0, x1, y1) in CROPS.items():
        share = differing(left[y0:y1, x0:x1], right[y0:y1, x0:x1])
        inked = float((left[y0:y1, x0:x1] < 128).mean())
        print(f"{name}: {100 * share:.2f}% of pixels differ; {100 * inked:.1f}% inked")
        if inked < 0.005:
            print(f"{name}: no text drawn at all")
            return 1
        worst = max(worst, share)
    if worst > LIMIT:
        print(
            f"text renders differently from the venv ({100 * worst:.1f}% > {100 * LIMIT:.0f}%):"
            " glyphs are missing (boxes) — a font package is missing from Depends"
        )
        return 1
    print("glyphs match the venv's render")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
