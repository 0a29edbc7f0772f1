"""Calibrate (F5) runs the recipe choice first, as ``workbench-cli quantize`` does by default (``--auto``).

The app's F5 calibrated the bare preset while the CLI's quantize chose among the preset, MSE ranges and
compute-only quantization: on digits_transformer the CLI writes compute+mse and the app wrote the preset,
and File > Export was not "as workbench-cli quantize does". Now the calibration job chooses first (one
undoable edit, the choice's own ranges), unless the Calibration panel's "Choose the recipe first" is off
(the preset as it is, ``--no-auto``); the setting is saved in the project.
"""

from __future__ import annotations

import re
import shutil

from cli_projects import app_export, cli_quantize, cli_replay, read_json, run_job
from latency_fakes import fixed_latency

from workbench.core import api

MODEL = "model_opset17.onnx"
SAMPLES = 24


def _folder(corpus, tmp_path):
    """digits_transformer's model and calib.npz copied to a folder of this test (outputs go beside them)."""
    folder = tmp_path / "m"
    folder.mkdir()
    for name in (MODEL, "calib.npz"):
        shutil.copy(corpus / "digits_transformer" / name, folder / name)
    return folder


def _export(qtbot, window, out):
    """The app's Export to ``out`` right after F5 (its bytes): the model the calibration analysed, its latency
    check's units already float (digits_transformer: attention MatMuls, as the CLI's quantize), so nothing is
    measured again (the export's own latency check kept them float and the window ran the analysis again)."""
    exported = app_export(qtbot, window, out)
    assert "written as it is" in window.status_label.text()
    assert "measured again" not in window.status_label.text() and not window.runs.busy
    return exported


def _open(window, open_file, folder, *, choose: bool = True):
    open_file(window, folder / MODEL)
    assert window.doc.data == {"kind": "npz", "path": str(folder / "calib.npz")}  # picked beside the model
    panel = window.calibration
    assert panel.choose_first.isChecked()  # on by default, as the CLI's --auto
    panel.samples.setValue(SAMPLES)
    panel.analysis_samples.setValue(8)
    panel.choose_first.setChecked(choose)
    assert window.doc.choose_recipe is choose


def test_f5_chooses_as_the_cli_and_exports_its_bytes(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    fixed_latency(monkeypatch)  # the app's and the CLI's latency checks decide alike (timed, a loaded machine did not)
    folder = _folder(corpus, tmp_path)
    _open(window, open_file, folder)
    preset = window.doc.recipe.model_copy(deep=True)
    edits = window.doc.undo_stack.index()
    messages: list[str] = []
    window.runs.progress.connect(lambda d, t, m: messages.append(m))
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    assert any(m.startswith("Choosing the recipe: ") for m in messages)
    # the choice the CLI makes (the same function, model, preset and rows)
    want = api.choose_recipe(api.open_model(folder / MODEL), preset, str(folder / "calib.npz"), samples=SAMPLES)
    assert want.chosen == "compute+mse"
    # the units the latency check keeps float (its unit probes, faked: attention's MatMuls)
    kept = res["latency_kept"]
    assert window.doc.recipe == want.recipe.with_excluded(kept) and window.doc.recipe.op_types == ["MatMul", "Gemm"]
    assert window.doc.undo_stack.index() == edits + 1 + bool(kept)  # one undoable edit each
    assert window.doc.results_current  # the figures are of the chosen recipe
    status = window.calibration.status.text()  # the whole text; the status bar holds its short line
    assert status.startswith(f"Done: {len(window.doc.errors)} node units analysed. Recipe choice: compute+mse (output "
                             f"SQNR on {want.held_out} held-out rows, dB: preset ")
    # two edits when the latency check kept units: the first Ctrl+Z undoes its edit, the second the choice
    keys = "Ctrl+Z twice (the first undoes the latency check's units)" if kept else "Ctrl+Z"
    assert f"{keys} restores the recipe the choice started from" in status and window.status_label.toolTip() == status
    assert window.status_label.text().startswith(f"Done: {len(window.doc.errors)} node units analysed. Recipe "
                                                 f"choice: {want.label} ({'Ctrl+Z twice' if kept else 'Ctrl+Z'} "
                                                 "undoes).")

    # File > Export writes what workbench-cli quantize writes with the same data and samples
    cli = folder / "cli.onnx"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--samples", SAMPLES, "-o", cli,
                 "--save-project", folder / "cli.wbproj", fixed_latency=True)
    exported = _export(qtbot, window, folder / "app.onnx")
    assert exported == cli.read_bytes()
    assert window.doc.recipe == api.load_project(folder / "cli.wbproj").recipe  # latency exclusions included
    # the project saved after it replays to the same bytes
    proj = window.save_project_to(folder / "app.wbproj")
    assert read_json(proj)["choose_recipe"] is True
    assert cli_replay(proj, folder / "replay.onnx", fixed_latency=True) == exported

    # undo of the choice (and of the calibration's latency edit) restores the preset; F5 then calibrates it as it is
    while window.doc.undo_stack.index() > edits:
        window.act_undo.trigger()
    assert window.doc.recipe == preset
    messages.clear()
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    assert window.doc.recipe == preset.with_excluded(res["latency_kept"]) and res["choice"] is None
    assert not any(m.startswith("Choosing") for m in messages)
    assert "ecipe choice" not in window.status_label.text()


def test_with_the_setting_off_f5_calibrates_the_preset_as_no_auto(qtbot, window, open_file, corpus, tmp_path,
                                                                  monkeypatch):
    fixed_latency(monkeypatch)
    folder = _folder(corpus, tmp_path)
    _open(window, open_file, folder, choose=False)
    preset = window.doc.recipe.model_copy(deep=True)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    assert window.doc.recipe == preset.with_excluded(res["latency_kept"]) and res["choice"] is None
    status = window.status_label.text()
    assert status.startswith("Done: ") and "choice" not in status.lower()  # nothing nags
    cli = folder / "cli.onnx"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--samples", SAMPLES, "--no-auto", "-o", cli,
                 fixed_latency=True)
    assert _export(qtbot, window, folder / "app.onnx") == cli.read_bytes()
    # saved in the project, shown again when it opens, undoable
    proj = window.save_project_to(folder / "p.wbproj")
    assert read_json(proj)["choose_recipe"] is False
    open_file(window, folder / MODEL)  # another open: the default again
    assert window.calibration.choose_first.isChecked() and window.doc.choose_recipe
    open_file(window, proj)
    assert not window.calibration.choose_first.isChecked() and not window.doc.choose_recipe
    assert not window.doc.modified
    window.calibration.choose_first.setChecked(True)
    assert window.doc.modified and window.doc.choose_recipe
    window.act_undo.trigger()
    assert not window.calibration.choose_first.isChecked() and not window.doc.choose_recipe
    assert not window.doc.modified


def test_cancel_during_the_choice_leaves_the_recipe(qtbot, window, open_file, corpus, tmp_path):
    folder = _folder(corpus, tmp_path)
    _open(window, open_file, folder)
    window.calibration.samples.setValue(0)  # every row: a longer choice
    before = window.doc.recipe.to_json()
    edits = window.doc.undo_stack.index()
    seen: list[str] = []

    def on_progress(_done, _total, message):
        if message.startswith("Choosing the recipe") and not seen:
            seen.append(message)
            window.runs.cancel()

    window.runs.progress.connect(on_progress)
    with qtbot.waitSignal(window.runs.cancelled, timeout=300_000):
        window.act_calibrate.trigger()
    qtbot.waitUntil(lambda: not window.runs.busy, timeout=60_000)
    assert seen
    assert window.doc.recipe.to_json() == before and window.doc.undo_stack.index() == edits
    assert window.doc.calibration is None and not window.doc.errors


def test_export_before_any_calibration_chooses_as_the_cli(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    """File > Export straight after opening: the CLI's quantize chooses, so the Export does too (one edit for
    the choice, one for the latency check's units, as the CLI's recipe records both)."""
    fixed_latency(monkeypatch)
    folder = _folder(corpus, tmp_path)
    _open(window, open_file, folder)
    preset = window.doc.recipe.model_copy(deep=True)
    edits = window.doc.undo_stack.index()
    cli = folder / "cli.onnx"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--samples", SAMPLES, "-o", cli,
                 "--save-project", folder / "cli.wbproj", fixed_latency=True)
    assert app_export(qtbot, window, folder / "app.onnx") == cli.read_bytes()
    assert window.doc.recipe == api.load_project(folder / "cli.wbproj").recipe
    status = window.status_label.text()
    # the choice's own float units (its line says how many), then the latency check's (its probes, faked)
    assert "Recipe choice: compute+mse (output SQNR" in status
    chose = re.search(r"; (\d+) units? kept float \(", status)
    kept = sum(1 for o in window.doc.recipe.overrides.values() if o.exclude) - int(chose.group(1) if chose else 0)
    assert kept and f"The latency check kept {kept} units float" in status
    assert window.doc.undo_stack.index() == edits + 2
    window.act_undo.trigger()
    window.act_undo.trigger()
    assert window.doc.recipe == preset
