"""The dtype legend's note on the edge badges names the dtypes the badges show: it read "edge badge (u8, i8)"
for a file with int8 pairs only. The diff tab's key says the same of its edge pills."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

pytest.importorskip("PySide6")

from test_diff_key_wrap import key_text  # noqa: E402

from workbench.core import api  # noqa: E402
from workbench.qt.canvas.legend import badge_dtypes  # noqa: E402
from workbench.qt.diff_panes import legend_html  # noqa: E402


def test_badge_dtypes_each_once_in_order_of_first_appearance():
    assert badge_dtypes(["i8", "i8", "i8 u16", "u8"]) == ["i8", "u16", "u8"]
    assert badge_dtypes([]) == []


def test_badge_note_of_an_int8_file_names_int8_only(window, open_file, tmp_path):
    path = tmp_path / "digits_cnn.s8s8.onnx"
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    api.export(api.quantize(model, api.make_recipe("s8s8"), data=str(EXAMPLE / "digits_cnn_calib.npz"), samples=8),
               path)
    open_file(window, path)
    badges = window.canvas._state.data.structure.edge_badges
    # 10 activation Q -> DQ pairs in the file: one on the graph input (a node tag), 9 on drawn edges
    assert len(badges) == 9 and set(badges.values()) == {"i8"}
    notes = window.canvas.legend_overlay.text().splitlines()
    assert "edge badge (i8): a folded Q/DQ pair" in notes
    assert not any("u8" in line for line in notes)


def test_badge_note_of_a_uint8_file(window, open_file, example_qdq_file):
    open_file(window, example_qdq_file)
    assert "edge badge (u8): a folded Q/DQ pair" in window.canvas.legend_overlay.text().splitlines()


def test_diff_key_names_the_quantized_pane_pill_dtypes():
    assert "edge pills (i8): Q/DQ pair inserted" in key_text(legend_html(["i8", "i8"]))
    assert "u8" not in legend_html(["i8"])
    assert "edge pills (u8, i8): Q/DQ" in key_text(legend_html(["u8", "i8 u8"]))
    assert "edge pills: Q/DQ pair inserted" in key_text(legend_html())  # before the pane is laid out


def test_diff_key_names_the_bias_tag():
    """The node tags of the quantized pane: "w:" for a weight DequantizeLinear, "b:" for a bias one (the key said
    "w: weight DQ" alone while biases were tagged "w:i32" too)."""
    assert key_text(legend_html()).endswith("Q/DQ pair inserted; w: weight DQ; b: bias DQ; out: pair before a graph "
                                            "output")
