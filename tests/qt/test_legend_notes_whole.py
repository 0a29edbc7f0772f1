"""A picture's colour legend holds its notes whole. ``workbench-cli render`` of digits_cnn coloured by SQNR
with every unit kept float (the latency check on a quiet Intel Xeon) drew the legend's grey note on six lines
in a frame sized for five: the last line, "Flatten)", was cut at the frame's bottom edge (label 168 px high,
182 px needed at its 288 px width). The frame was sized from the layout's size hint, which does not follow
the wrapped label's height for its width."""

from __future__ import annotations

from bundled_example import EXAMPLE

from workbench.qt.canvas import group_view
from workbench.qt.render import render_to_file

NOTES = ["linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB (red)",
         "no value (grey): 5 units kept float by the recipe, a guard or the latency check (--no-latency-check "
         "measures the units it keeps); 5 nodes not quantized (in no unit: Relu, MaxPool, Flatten)"]


def test_render_legend_frame_holds_every_wrapped_line(qtbot, tmp_path, monkeypatch):
    seen = []
    write = group_view.CanvasGroups._write_picture

    def spy(canvas, path):
        legend = canvas.legend_overlay
        seen.append((legend.height(), legend.layout().totalHeightForWidth(legend.width()),
                     legend.label.height(), legend.label.heightForWidth(legend.label.width())))
        return write(canvas, path)

    monkeypatch.setattr(group_view.CanvasGroups, "_write_picture", spy)
    units = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv", "/f/f.9/AveragePool", "/head/head.2/Gemm"]
    render_to_file(str(EXAMPLE / "digits_cnn.onnx"), str(tmp_path / "g.png"), mode="error", errors={},
                   error_notes=NOTES, floats=units)
    frame, needed, label, label_needed = seen[0]
    assert label >= label_needed, seen
    assert frame >= needed, seen
