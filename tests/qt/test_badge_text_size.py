"""Badge text (edge Q/DQ badges 'u8', node tags 'in:u8 w:i8', INT marks) is at least 8 px on screen
wherever it is drawn: at the zoom a quantized file opens with it was 6 px (a 9 px font at scale
0.69). Zoomed out further the badges are hidden rather than drawn unreadable, but for the INT marks, drawn as large as
the op type they mark. Offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QTransform  # noqa: E402

from workbench.qt.canvas import items  # noqa: E402
from workbench.qt.canvas.readable import font_px, readable_scale  # noqa: E402


def _drawn_pills(qtbot, canvas, scale, monkeypatch):
    """(text, on-screen pixel size of its font) of every pill painted at view ``scale``."""
    drawn = []
    real = items._pill

    def spy(painter, x, y, text, fill, right=False, k=1.0):
        drawn.append((text, font_px(items._Fonts.badge) * k * scale))
        real(painter, x, y, text, fill, right, k)

    monkeypatch.setattr(items, "_pill", spy)
    canvas.setTransform(QTransform.fromScale(scale, scale))
    canvas.viewport().grab()
    monkeypatch.setattr(items, "_pill", real)
    return drawn


def test_badges_readable_or_hidden(qtbot, window, open_file, example_qdq_file, monkeypatch):
    open_file(window, example_qdq_file)
    canvas = window.canvas
    opened = min(1.0, readable_scale(canvas._state.data))
    assert opened == pytest.approx(9 / 13)  # the zoom a model opens with when it does not fit: 0.69
    canvas.centerOn(canvas.scene_bounds().center())
    for scale in (opened, 0.8, 1.0, 1.5):
        drawn = _drawn_pills(qtbot, canvas, scale, monkeypatch)
        texts = {t for t, _ in drawn}
        assert "INT" in texts and any(t in ("u8", "i8") for t in texts), texts
        assert min(px for _, px in drawn) >= items.BADGE_MIN_PX - 1e-6  # was 6.2 px at 0.69
    # 0.58: the Q/DQ badges and tags would be 5.2 px: hidden, not drawn unreadable. The INT marks stay, as large as
    # the op type they mark (7865a504: below 0.55 a bar under the op type takes over), so never smaller than it
    drawn = _drawn_pills(qtbot, canvas, 0.58, monkeypatch)
    op_px = font_px(items._Fonts.op) * 0.58
    assert {t for t, _ in drawn} == {"INT"} and all(px == pytest.approx(op_px) for _, px in drawn), (drawn, op_px)
