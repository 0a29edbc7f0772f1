"""The inspector offers the weight MX (microscaling) dtypes only on per_block settings. An MX format shares one
scale per block of 32 values, so a per_tensor or per_channel spec cannot hold it: the inspector offered mxint8 on a
Conv's per_channel weight and then showed the spec conflict in red (a recipe file may not hold it). They are greyed
now, the reason in the item's tooltip, like the refused activation choices; on per_block they are offered, and an
MX weight's granularity offers per_block only."""

from __future__ import annotations

from test_inspector_unapplied_choices import _offered, _tip

from workbench.core import api

MX = ["mxfp8e4m3", "mxfp8e5m2", "mxfp6e2m3", "mxfp6e3m2", "mxfp4", "mxint8"]


def test_mx_weight_dtypes_only_on_per_block(qtbot, window, open_file, corpus, tmp_path):
    win = window
    open_file(win, corpus / "nudenet_320n" / "model.onnx")
    conv = "/model.0/conv/Conv"
    win.canvas.select_nodes([conv])
    weight = win.inspector.roles["weight"]
    assert weight.granularity.currentText() == "per_channel"
    assert [d for d in _offered(weight.dtype) if d in MX] == []
    assert {"int8", "uint8", "int4", "float8e4m3fn"} <= set(_offered(weight.dtype))
    assert _tip(weight.dtype, "mxint8") == (
        "Not offered: mxint8 is an MX block format (one shared scale per block of 32 values), which per_channel "
        "cannot hold: set the granularity to per_block, block_size 32, first.")
    assert _tip(weight.dtype, "int8") == ""

    weight.granularity.setCurrentText("per_tensor")
    assert win.doc.recipe.overrides[conv].weight.granularity == "per_tensor"
    assert [d for d in _offered(weight.dtype) if d in MX] == []
    assert "which per_tensor cannot hold" in _tip(weight.dtype, "mxfp4")

    weight.granularity.setCurrentText("per_block")
    weight.block_size.setValue(32)
    assert [d for d in _offered(weight.dtype) if d in MX] == MX
    assert _tip(weight.dtype, "mxint8") == ""
    weight.dtype.setCurrentText("mxint8")
    assert win.doc.recipe.overrides[conv].weight.dtype == "mxint8"
    assert _offered(weight.granularity) == ["per_block"]
    assert _tip(weight.granularity, "per_tensor") == (
        "Not offered: mxint8 is an MX block format: it takes per_block only; choose another dtype first.")
    assert win.inspector.problems.text() == ""  # no spec conflict on the way

    # back out the way the tooltips say: another dtype first, then the granularity
    weight.dtype.setCurrentText("int8")
    assert _offered(weight.granularity) == ["per_tensor", "per_channel", "per_block"]

    # what the app saves with the choices it offers loads with the CLI
    weight.dtype.setCurrentText("mxfp4")
    (tmp_path / "r.json").write_text(win.doc.recipe.to_json())
    loaded = api.load_recipe(tmp_path / "r.json")
    assert loaded == win.doc.recipe
    assert (loaded.overrides[conv].weight.dtype, loaded.overrides[conv].weight.granularity,
            loaded.overrides[conv].weight.block_size) == ("mxfp4", "per_block", 32)
