"""The op types a model uses most are drawn in clearly different colours: on ppocrv4_rec Add, Mul,
Div, Cast and ReduceMean were all light greens, Conv and MatMul both blue, Clip and Sigmoid both
salmon. Now the 8 most frequent op types of ppocrv4_rec and of minilm_l6_v2 differ pairwise by a
CIE76 colour difference of at least 15, in the light and the dark theme, and the legend shows
those colours. Offscreen."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("PySide6")

#: the smallest colour difference (CIE76) between two of a model's most frequent op types
MIN_DELTA_E = 15.0


def lab(c) -> np.ndarray:
    """CIE L*a*b* (D65) of a QColor."""
    rgb = np.array([c.redF(), c.greenF(), c.blueF()])
    rgb = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(c1, c2) -> float:
    return float(np.linalg.norm(lab(c1) - lab(c2)))


def test_delta_e_reference():
    from PySide6.QtGui import QColor

    assert delta_e(QColor("#000000"), QColor("#ffffff")) == pytest.approx(100.0, abs=0.01)
    assert delta_e(QColor("#c5e1a5"), QColor("#c5e1a5")) == 0.0


def _top_fills(canvas, n: int = 8):
    st = canvas._state.data.structure
    first = {}
    for name, op in zip(st.names, st.op_types, strict=True):
        first.setdefault(op, name)
    top = [op for op, _ in Counter(st.op_types).most_common(n)]
    return top, {op: canvas.node_color(first[op]) for op in top}


@pytest.mark.parametrize("model", ["ppocrv4_rec", "minilm_l6_v2"])
def test_most_frequent_ops_are_clearly_apart(qtbot, window, open_file, corpus, model):
    from workbench.qt.canvas.legend import legend_entries

    open_file(window, corpus / model / "model.onnx")
    canvas = window.canvas
    for theme in ("light", "dark"):
        window.set_theme(theme)
        qtbot.wait(50)
        top, fills = _top_fills(canvas)
        assert len(top) == 8
        close = [(a, b, round(delta_e(fills[a], fills[b]), 1)) for a, b in itertools.combinations(top, 2)
                 if delta_e(fills[a], fills[b]) < MIN_DELTA_E]
        assert close == [], f"{model} ({theme}): op colours too alike: {close}"
        background = canvas.backgroundBrush().color()
        assert min(delta_e(fills[o], background) for o in top) >= MIN_DELTA_E  # nodes stand out
        title, rows, _ = legend_entries(canvas)
        shown = {label.rsplit(" (", 1)[0]: col.name() for label, col in rows}
        assert title == "op type" and all(shown[o] == fills[o].name() for o in top)  # the legend shows them
    window.set_theme("light")


def test_family_colours_stay_when_free(qtbot, window, open_file, corpus):
    """Conv keeps blue, MatMul navy, Add green where no more frequent op type took the colour."""
    from workbench.qt.canvas import colors

    open_file(window, corpus / "ppocrv4_rec" / "model.onnx")
    palette = window.canvas.op_colors()
    assert palette["Conv"].name() == colors.SLOTS["blue"] and palette["MatMul"].name() == colors.SLOTS["navy"]
    assert palette["Add"].name() == colors.SLOTS["green"] and palette["Mul"].name() == colors.SLOTS["lime"]
    assert palette["Clip"].name() == colors.SLOTS["red"] != palette["Sigmoid"].name()
    assert palette["Div"].name() == colors.SLOTS["teal"] and palette["ReduceMean"].name() == colors.SLOTS["pink"]


@pytest.mark.parametrize("model", ["minilm_l6_v2", "nudenet_320n", "ppocrv4_rec"])
def test_a_taken_family_colour_never_falls_to_red_or_orange(qtbot, window, open_file, corpus, model):
    """An op type whose family colour a more frequent one took moves to a free colour, never to red or orange
    (errors and warnings): minilm_l6_v2's Transpose (grey taken by Unsqueeze) and nudenet_320n's Gather were red,
    ppocrv4_rec's Slice and minilm_l6_v2's Shape orange."""
    from workbench.qt.canvas import colors

    open_file(window, corpus / model / "model.onnx")
    palette = window.canvas.op_colors()
    reserved = {colors.SLOTS["red"], colors.SLOTS["orange"]}
    fallen = {op: c.name() for op, c in palette.items()
              if c.name() in reserved and colors.op_color(op).name() not in reserved}
    assert fallen == {}, f"{model}: op types drawn in an error or warning colour: {fallen}"
    if model == "minilm_l6_v2":
        assert palette["Transpose"].name() != palette["Unsqueeze"].name()  # still apart from the op that took grey
        assert palette["Mul"].name() == colors.SLOTS["lime"]  # a family colour stays with its family
