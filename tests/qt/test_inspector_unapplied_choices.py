"""The inspector offers no choice the plan would not apply as written, which a recipe file (the CLI's --recipe) and
a project may not hold: per_channel / per_block / MX activations of a static preset, per_block with an observer that
computes no per-block ranges. It offered them, and a project saved from the app with one was then refused by
``workbench-cli quantize --recipe`` (b61f7e3, 18bbf40). They are greyed, the reason in the item's tooltip; what the
app saves from the choices it offers loads with the CLI."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.core import api

CONVS = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]


def _offered(combo) -> list[str]:
    model = combo.model()
    return [combo.itemText(i) for i in range(combo.count()) if model.item(i).isEnabled()]


def _tip(combo, text: str) -> str:
    return combo.itemData(combo.findText(text), Qt.ItemDataRole.ToolTipRole) or ""


def test_the_inspector_offers_what_a_recipe_file_may_hold(qtbot, window, open_file, corpus, tmp_path):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.canvas.select_nodes(CONVS)
    activation, weight = win.inspector.roles["activation"], win.inspector.roles["weight"]
    assert _offered(activation.granularity) == ["per_tensor"]
    assert _tip(activation.granularity, "per_channel") == (
        "Not offered: per_channel activations do not fuse into integer kernels: the plan would quantize them "
        "per_tensor.")
    assert not [d for d in _offered(activation.dtype) if d.startswith("mx")]
    assert {"uint8", "int8", "int16"} <= set(_offered(activation.dtype))
    assert _tip(activation.dtype, "mxint8").startswith("Not offered: mxint8 is an MX block format")
    assert not [d for d in _offered(win.recipe_panel.act_dtype) if d.startswith("mx")]
    assert "mxint8" in _offered(win.recipe_panel.w_dtype)  # MX formats are for weights

    # per_block only with an observer that computes per-block ranges, and those observers only with per_block
    assert "per_block" in _offered(weight.granularity) and _offered(weight.observer) == list(api.OBSERVERS)
    weight.observer.setCurrentText("entropy")
    assert all(win.doc.recipe.overrides[c].weight.observer == "entropy" for c in CONVS)
    assert _offered(weight.granularity) == ["per_tensor", "per_channel"]
    assert _tip(weight.granularity, "per_block") == (
        "Not offered: the entropy observer computes no per_block ranges (calibration would use minmax instead): "
        "set the observer to minmax first.")
    weight.observer.setCurrentText("minmax")
    weight.granularity.setCurrentText("per_block")
    weight.block_size.setValue(4)
    assert all(win.doc.recipe.overrides[c].weight.granularity == "per_block" for c in CONVS)
    assert _offered(weight.observer) == ["minmax"]
    assert _tip(weight.observer, "mse") == ("Not offered: the mse observer computes no per_block ranges (calibration "
                                            "would use minmax instead): per_block settings take minmax.")

    # one node per_block, the others per_channel with entropy: neither offered across the three
    win.canvas.select_nodes(CONVS[1:])
    weight.granularity.setCurrentText("per_channel")
    weight.block_size.setValue(0)  # "none": the override's block_size removed
    weight.observer.setCurrentText("entropy")
    win.canvas.select_nodes(CONVS)
    assert weight.granularity.currentIndex() == -1 and weight.observer.currentIndex() == -1  # mixed
    assert _offered(weight.granularity) == ["per_tensor", "per_channel"] and _offered(weight.observer) == ["minmax"]

    # what the app saves loads with the CLI: the project, and its recipe as a recipe file
    saved = win.save_project_to(tmp_path / "job.wbproj")
    assert api.load_project(saved).recipe == win.doc.recipe
    (tmp_path / "r.json").write_text(win.doc.recipe.to_json())
    assert api.load_recipe(tmp_path / "r.json") == win.doc.recipe


def test_a_dynamic_preset_keeps_its_activation_choices(qtbot, window, open_file, corpus):
    """The checks are a static plan's: a dynamic preset quantizes activations at run time, and a recipe file may
    set their granularity."""
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.recipe_panel.preset.setCurrentText("dynamic-u8")
    assert win.doc.recipe.preset == "dynamic-u8"
    win.canvas.select_nodes(CONVS)
    activation = win.inspector.roles["activation"]
    if not activation.isHidden():
        assert _offered(activation.granularity) == ["per_tensor", "per_channel", "per_block"]
    assert any(d.startswith("mx") for d in _offered(win.recipe_panel.act_dtype))
