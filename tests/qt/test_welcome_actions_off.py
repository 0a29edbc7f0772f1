"""With no model open (the welcome page), the commands that act on a graph or a model are off.

Fit graph (on the toolbar), the zooms, the group depths, Find / F3, Legend and Open in Netron were enabled
over the welcome page: Fit and the zooms did nothing, Open in Netron answered with an error box. They come
on with the first model.
"""

from __future__ import annotations

from bundled_example import EXAMPLE

NEEDS_A_MODEL = ("fit", "zoom_in", "zoom_out", "expand_all", "collapse_all", "depth_1", "depth_2", "depth_3",
                 "find", "find_next", "find_previous", "legend", "netron")
ALWAYS = ("open", "open_project", "open_example", "quit", "documentation", "shortcuts", "about", "sweep_executor")


def test_graph_commands_are_off_until_a_model_opens(qtbot, window, open_file, dialogs):
    win = window
    assert win.doc.model is None and win.welcome.isVisible()
    on = [name for name in NEEDS_A_MODEL if getattr(win, f"act_{name}").isEnabled()]
    assert on == []
    assert all(getattr(win, f"act_{name}").isEnabled() for name in ALWAYS)
    win.act_netron.trigger()  # a disabled action does nothing: no error box
    assert list(dialogs) == []

    open_file(win, EXAMPLE / "digits_cnn.onnx")
    off = [name for name in NEEDS_A_MODEL if not getattr(win, f"act_{name}").isEnabled()]
    assert off == []
