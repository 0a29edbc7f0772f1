"""A folded role section of a selection whose nodes differ says what differs and on how many nodes.

With a Conv and a HardSigmoid (float under cpu-u8s8) of ppocr_mobile_v2_cls selected, the folded Activation line
read "quantize mixed: uint8, asymmetric, per_tensor, minmax (not quantized, preset cpu-u8s8)"; with three Convs
of digits_cnn differing in dtype, symmetry and reduce_range, "mixed, symmetric mixed, per_tensor, minmax,
reduce_range (override, preset cpu-u8s8)", reduce_range as if on all three. One node's line is as it was."""

from __future__ import annotations

from test_app_flow import search


def _select(qtbot, win, names: list[str]) -> None:
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=60_000):
        win.canvas.select_nodes(names)


def _folded(win, role: str = "activation") -> str:
    editor = win.inspector.roles[role]
    editor.set_expanded(False)
    assert editor.summary.text() == editor.summary_text() and not editor.isHidden()
    return editor.summary.text()


def test_a_quantized_and_a_float_node_count_float_among_the_dtypes(qtbot, window, open_file, corpus):
    open_file(window, corpus / "ppocr_mobile_v2_cls/model.onnx")
    _select(qtbot, window, ["Conv@0", "HardSigmoid@0"])
    assert _folded(window) == ("dtype mixed (uint8 on 1, float on 1), asymmetric, per_tensor, minmax "
                               "(not quantized, preset cpu-u8s8)")
    _select(qtbot, window, ["Conv@0"])
    assert _folded(window) == "uint8, asymmetric, per_tensor, minmax (preset cpu-u8s8)"
    _select(qtbot, window, ["HardSigmoid@0"])
    assert _folded(window) == "not quantized (not quantized)"


def test_fields_that_differ_are_counted(qtbot, window, open_file, corpus):
    open_file(window, corpus / "digits_cnn/model_opset17.onnx")
    activation = window.inspector.roles["activation"]
    search(qtbot, window, "/f/f.0/Conv")
    activation.symmetric.click()
    activation.reduce_range.click()
    assert _folded(window) == "uint8, symmetric, per_tensor, minmax, reduce_range (override)"
    search(qtbot, window, "/f/f.3/Conv")
    activation.dtype.setCurrentText("int16")
    assert _folded(window) == "int16, asymmetric, per_tensor, minmax (override)"
    assert search(qtbot, window, "Conv") == ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]
    assert _folded(window) == ("dtype mixed (uint8 on 2, int16 on 1), symmetry mixed (asymmetric on 2, symmetric "
                               "on 1), per_tensor, minmax, reduce_range on 1 of 3 (override, preset cpu-u8s8)")
    assert _folded(window, "weight") == "int8, symmetric, per_channel, minmax (preset cpu-u8s8)"  # all the same
