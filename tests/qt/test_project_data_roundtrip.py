"""A project's calibration data comes back from the app exactly as the project has it.

``workbench-cli quantize --data FOLDER --save-project`` stores ``{"path": FOLDER}`` (no kind: the loader
opens it by its content). The app showed it as an array *file* and saved ``{"kind": "npz", ...}``, which
neither it nor the CLI could read. Opening a project also rewrote its data spec: fields the panel has no
widget for (an .npz ``layout``, ``resize`` / ``pad_value`` / ``input`` of images) were dropped, a scale
of 1/255 came back as the spin box's 0.00392157, defaults the project left out (layout, RGB, a 3-channel
mean and std) were added, fields of the previous project stayed, and a random source became no data.
Here each spec opens, saves back unchanged, and the app's Export equals the CLI's replay.
"""

from __future__ import annotations

import pytest
from cli_projects import MODEL, app_export, cli_quantize, cli_replay, digits_folder, read_json, write_variant
from latency_fakes import fixed_latency


@pytest.mark.parametrize("data, entry", [("calibdir", "folder"), ("imgs", "images")])
def test_cli_project_with_a_data_folder_opens_exports_and_saves_back(qtbot, window, open_file, corpus, tmp_path,
                                                                    monkeypatch, data, entry):
    # fixed latency measurements in the CLI and the app: the latency placement's probes of digits_cnn's first
    # Conv and AveragePool, measured in each run, could keep different units float in the export and a replay
    fixed_latency(monkeypatch)
    folder = digits_folder(corpus, tmp_path)
    proj = folder / "p.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / data, "--save-project", proj, "-o", tmp_path / "cli.onnx",
                 fixed_latency=True)
    written = read_json(proj)
    assert written["data"] == {"path": data}

    open_file(window, proj)
    assert window.calibration.kind.currentData() == entry
    assert window.doc.data == {"path": str(folder / data)}
    assert not window.doc.modified
    exported = app_export(qtbot, window, tmp_path / "app.onnx")
    assert exported == cli_replay(proj, tmp_path / "replay.onnx", fixed_latency=True)

    window.save_project()  # Ctrl+S
    assert read_json(proj)["data"] == {"path": data}
    assert cli_replay(proj, tmp_path / "replay2.onnx", fixed_latency=True) == exported


def _specs(folder):
    """Data specs of every kind, as projects hold them (paths relative to the project)."""
    return [
        {"kind": "images", "path": "imgs", "size": [8, 8], "layout": "NCHW", "channel_order": "BGR",
         "mean": [0.25], "std": [0.5], "scale": 1 / 255, "input": "input", "resize": "letterbox", "pad_value": 0},
        {"kind": "images", "path": "imgs"},  # nothing of the spec above may stay
        {"kind": "npz", "path": "calib.npz", "layout": "batch"},
        {"kind": "npy", "path": "calib.npy"},
        {"kind": "folder", "path": "calibdir", "layout": "auto"},
        {"path": "calibdir"},
        {"path": "imgs"},
        {"kind": "random", "count": 8, "seed": 3, "int_high": 4},
        {"kind": "images", "path": "imgs", "size": [8, 8], "resize": "center_crop"},
    ]


def test_every_kind_of_data_spec_saves_back_unchanged(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    base = folder / "base.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--save-project", base, "-o", tmp_path / "b.onnx")
    for i, spec in enumerate(_specs(folder)):
        proj = write_variant(base, folder / f"spec{i}.wbproj", data=spec, samples=7 if i % 2 else None,
                             calibration=None)
        before = read_json(proj)
        open_file(window, proj)
        shown = dict(spec, path=str(folder / spec["path"])) if "path" in spec else spec
        assert window.doc.data == shown, spec
        assert not window.doc.modified, spec
        window.save_project()
        assert read_json(proj) == before, spec


def test_images_with_an_exact_scale_export_as_the_cli_replays(qtbot, window, open_file, corpus, tmp_path,
                                                              monkeypatch):
    """1/255 and no mean on a 1-channel model: the app rounded the scale (other bytes than the CLI's) and
    added a 3-value mean (the export failed: "mean has 3 values but the input has 1 channels")."""
    fixed_latency(monkeypatch)  # the export and the replay keep the same units float (measured, they could differ)
    folder = digits_folder(corpus, tmp_path)
    base = folder / "base.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--save-project", base, "-o", tmp_path / "b.onnx",
                 fixed_latency=True)
    proj = write_variant(base, folder / "img.wbproj", calibration=None,
                         data={"kind": "images", "path": "imgs", "size": [8, 8], "scale": 1 / 255})
    open_file(window, proj)
    exported = app_export(qtbot, window, tmp_path / "app.onnx")
    assert exported == cli_replay(proj, tmp_path / "replay.onnx", fixed_latency=True)
    window.save_project()
    assert read_json(proj)["data"] == {"kind": "images", "path": "imgs", "size": [8, 8], "scale": 1 / 255}


def test_an_edited_image_field_changes_only_that_field(qtbot, window, open_file, corpus, tmp_path):
    """The fields the user leaves alone keep the project's values (the scale exactly)."""
    folder = digits_folder(corpus, tmp_path)
    base = folder / "base.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--save-project", base, "-o", tmp_path / "b.onnx")
    spec = {"kind": "images", "path": "imgs", "scale": 1 / 255, "resize": "letterbox", "pad_value": 0}
    proj = write_variant(base, folder / "img.wbproj", calibration=None, data=spec)
    open_file(window, proj)
    panel = window.calibration
    panel.channel_order.setCurrentText("BGR")
    assert window.doc.modified
    window.save_project()
    assert read_json(proj)["data"] == dict(spec, channel_order="BGR")
    panel.mean.setText("0.5")
    panel.mean.editingFinished.emit()
    panel.scale.setValue(0.5)
    window.save_project()
    assert read_json(proj)["data"] == dict(spec, channel_order="BGR", mean=[0.5], scale=0.5)
    panel.kind.setCurrentIndex(panel.kind.findData("folder"))  # another kind: a new spec of that kind
    panel.path.setText(str(folder / "calibdir"))
    panel.path.editingFinished.emit()
    window.save_project()
    assert read_json(proj)["data"] == {"kind": "folder", "path": "calibdir"}
