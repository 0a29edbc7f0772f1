"""The diff tab's colour key draws each colour as an outlined box: a square glyph in Constant's #eeeeee
(or "no value"'s #d9d9d9) was all but invisible on the window colour (pytest-qt, offscreen)."""

from __future__ import annotations

import base64
import re

import pytest

pytest.importorskip("PySide6")

from graph_models import constant_add_model  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from test_diff_key_wrap import key_text  # noqa: E402

from workbench.qt.diff_panes import pane_key_html  # noqa: E402


def test_pane_key_swatches_are_outlined(qtbot, make_canvas):
    view = make_canvas(600, 400, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(constant_add_model())
    key = pane_key_html("Left", view)
    assert key_text(key).startswith("Left colour: op type: ")
    images = [QImage.fromData(base64.b64decode(d)) for d in re.findall(r'src="data:image/png;base64,([^"]+)"', key)]
    assert len(images) == 2  # Add, Constant
    fills = {img.pixelColor(img.width() // 2, img.height() // 2).name() for img in images}
    assert fills == {view.op_colors()[op].name() for op in ("Add", "Constant")}
    for img in images:  # a dark grey edge round every box, the near-white one too
        assert img.pixelColor(0, img.height() // 2).lightness() < 130
        assert img.pixelColor(img.width() // 2, 0).lightness() < 130
