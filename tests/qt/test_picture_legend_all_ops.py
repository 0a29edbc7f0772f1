"""A picture's op legend lists every op type in a colour of its own, with no line asking for a click: the PNG
``workbench-cli render`` drew of nudenet_320n (21 op types) ended its legend with "7 more op types (click to
list)", and Resize (2 nodes), one of those 7, was drawn in MaxPool's purple (found by a new user). In the app
the legend keeps its first 14 rows and the clickable line."""

from __future__ import annotations

import itertools
import re
from collections import Counter

import numpy as np
import onnx
from PIL import Image
from test_op_palette import MIN_DELTA_E, delta_e

from workbench.cli import main
from workbench.qt.canvas import colors

NUDENET = "nudenet_320n/model.onnx"


def _ops(path) -> Counter:
    return Counter(n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node)


def _svg_texts(path) -> list[str]:
    return [" ".join(t.split()) for t in re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text(encoding="utf-8"))]


def test_every_op_type_of_nudenet_has_a_colour_of_its_own(corpus):
    palette = colors.op_palette(list(_ops(corpus / NUDENET).elements()))
    assert len(palette) == 21
    close = [(a, b) for a, b in itertools.combinations(palette, 2) if delta_e(palette[a], palette[b]) < MIN_DELTA_E]
    assert close == []
    assert delta_e(palette["Resize"], palette["MaxPool"]) >= MIN_DELTA_E
    for op in ("Conv", "Mul", "Sigmoid", "Concat", "Add"):  # the most frequent keep their family colours
        assert palette[op].name() == colors.op_color(op).name()


def test_render_lists_every_op_type_with_its_colour(corpus, tmp_path):
    model = corpus / NUDENET
    ops = _ops(model)
    png, svg = tmp_path / "op.png", tmp_path / "op.svg"
    assert main(["render", str(model), "-o", str(png)]) == 0
    assert main(["render", str(model), "-o", str(svg)]) == 0
    texts = _svg_texts(svg)
    assert [f"{op} ({n})" for op, n in ops.most_common()] == [t for t in texts if re.fullmatch(r"\w+ \(\d+\)", t)]
    assert "Colour: op type" in texts
    assert not [t for t in texts if "click" in t or "more op types" in t]
    palette = colors.op_palette(list(ops.elements()))
    legend = np.asarray(Image.open(png).convert("RGB"))[:400, :320].reshape(-1, 3)
    for op in ops:  # each row's swatch (about 16 x 12 px) in its own colour
        rgb = (palette[op].red(), palette[op].green(), palette[op].blue())
        assert (legend == rgb).all(axis=1).sum() >= 100, op


def test_the_app_keeps_its_clickable_line_and_a_picture_of_it_lists_every_op(qtbot, make_canvas, corpus, tmp_path):
    canvas = make_canvas()
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(onnx.load(str(corpus / NUDENET)))
    legend = canvas.legend_overlay
    shown = legend.text().splitlines()
    assert shown[0] == "op type" and len(shown) == 1 + 14 + 1 and shown[-1] == "\u25b8 7 more op types (click to list)"
    out = tmp_path / "picture.svg"
    canvas.export_picture(out)
    texts = _svg_texts(out)
    assert "Resize (2)" in texts and "Div (1)" in texts and "Colour: op type" in texts
    assert not [t for t in texts if "click" in t or "more op types" in t]
    assert legend.text().splitlines() == shown and not legend.picture  # the canvas's legend as it was
