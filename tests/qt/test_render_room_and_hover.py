"""``render`` pictures end where the drawing ends, and an SVG names each group whole on hover.

``render ppocrv4_rec`` wrote an 858 px wide PNG whose drawing (legend, group titles, frames) ended 109 px
before its right edge, 8 px after its left one: the fit centres the graph, and the room made for the group
titles running past its left edge stayed empty on the right. Its SVG elided the collapsed boxes' titles
to the box ("Conv.16 – Mul.1…") with no ``<title>`` holding the whole name. Boxes are now as wide as their titles
need up to ``MAX_BOX_W``: only a longer title is cut, and named whole on hover."""

from __future__ import annotations

import re
from xml.dom import minidom

import onnx
from onnx import TensorProto, helper
from PySide6.QtGui import QImage

from workbench.qt.render import render_to_file

ELLIPSIS = "\u2026"


def _rooms(path) -> tuple[int, int, int, int]:
    """Empty pixels left of, right of, above and below what a PNG draws (pixels unlike its background,
    read at the bottom-right corner)."""
    image = QImage(str(path))
    bg = image.pixel(image.width() - 1, image.height() - 1)
    cols = [x for x in range(image.width()) if any(image.pixel(x, y) != bg for y in range(0, image.height(), 2))]
    rows = [y for y in range(image.height()) if any(image.pixel(x, y) != bg for x in range(0, image.width(), 2))]
    return cols[0], image.width() - 1 - cols[-1], rows[0], image.height() - 1 - rows[-1]


def test_png_has_as_little_room_right_and_below_as_left_and_above(qtbot, corpus, tmp_path):
    out = tmp_path / "ppocr.png"
    w, h = render_to_file(str(corpus / "ppocrv4_rec" / "model.onnx"), str(out), max_side=1200)
    left, right, top, bottom = _rooms(out)
    assert left <= 40 and top <= 40  # the legend's corner
    # a few pixels more on the right and below: the drawn bounds include the edges' bows and arrow heads
    assert right <= left + 8, (w, left, right)
    assert bottom <= top + 8, (h, top, bottom)


def _hover(text: str) -> dict[str, list[float]]:
    """Whole title -> (x, y, width, height) of the rectangle hovering shows it on, per group of an SVG."""
    hover = {}
    for g in minidom.parseString(text).getElementsByTagName("g"):  # still well-formed XML
        titles, rects = g.getElementsByTagName("title"), g.getElementsByTagName("rect")
        if titles and rects and g.parentNode.tagName == "svg":
            rect = rects[0]
            hover[titles[0].firstChild.data] = [float(rect.getAttribute(k)) for k in ("x", "y", "width", "height")]
    return hover


def test_svg_holds_each_groups_whole_title_on_hover(qtbot, corpus, tmp_path):
    out = tmp_path / "ppocr.svg"
    w, h = render_to_file(str(corpus / "ppocrv4_rec" / "model.onnx"), str(out), depth=0)
    text = out.read_text(encoding="utf-8")
    hover = _hover(text)
    drawn = re.findall(r">([^<]*)</text>", text)
    # the box is as wide as its title needs (it was "Conv.16 – Mul.1…" in a 240 wide box)
    assert "Conv.16 – Mul.126" in drawn and not [t for t in drawn if ELLIPSIS in t]
    assert "Conv.16 – Mul.126" in hover
    for x, y, rw, rh in hover.values():  # inside the picture
        assert 0 <= x and 0 <= y and x + rw <= w + 0.5 and y + rh <= h + 0.5


def test_svg_names_a_title_cut_to_the_widest_box_whole_on_hover(qtbot, tmp_path):
    """A title longer than the widest box (MAX_BOX_W) holds is cut; hovering the box gives it whole."""
    scope = "encoder_layer_eleven_self_attention_output_dense_projection_with_bias"
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"/{scope}/Relu_{i}") for i in range(3)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("t3", TensorProto.FLOAT, [1, 8])])
    model, out = tmp_path / "long.onnx", tmp_path / "long.svg"
    onnx.save(helper.make_model(graph), model)
    render_to_file(str(model), str(out), depth=0)
    text = out.read_text(encoding="utf-8")
    elided = [t for t in re.findall(r">([^<]*)</text>", text) if ELLIPSIS in t]
    assert len(elided) == 1 and scope.startswith(elided[0].split(ELLIPSIS)[0])
    assert scope in _hover(text)
