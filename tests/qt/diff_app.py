"""The diff (Compare) tab of a calibrated model, for the app tests: ppocrv4_rec calibrated on 4 rows in the app (the
latency measurements fixed by :func:`latency_fakes.fixed_latency`, so the Errors dock has its per-unit bars), then
compared with our QDQ export of it (cpu-u8s8, 4 calibration rows)."""

from __future__ import annotations

from pathlib import Path

from bundled_example import EXAMPLE, EXAMPLE_MODEL
from cli_projects import run_ok
from PySide6.QtWidgets import QApplication
from shared_paths import CORPUS

from workbench.core import api

PPOCR = CORPUS / "ppocrv4_rec"


def ppocr_qdq(folder: Path) -> Path:
    """Our QDQ export of ppocrv4_rec (cpu-u8s8, 4 calibration rows) written in ``folder``."""
    out = folder / "ppocr.qdq.onnx"
    model = api.open_model(PPOCR / "model.onnx")
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(PPOCR / "calib.npz"), samples=4), out)
    return out


def settle(rounds: int = 30) -> None:
    for _ in range(rounds):  # layout requests posted by resizes and fits
        QApplication.processEvents()


def calibrate(qtbot, win) -> None:
    """Calibrate the open ppocrv4_rec on 4 rows of its calib.npz (4 analysis samples) and wait until the Errors dock
    shows its per-unit bars. Call a fake of :mod:`latency_fakes` first (fixed_latency, quantized_faster)."""
    win.calibration.set_data_spec({"kind": "npz", "path": str(PPOCR / "calib.npz")}, 4)
    win._on_spec_changed()
    win.calibration.analysis_samples.setValue(4)
    win._on_spec_changed()
    run_ok(qtbot, win, win.act_calibrate.trigger)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=60_000)


def calibrated_diff(qtbot, win, open_file, quantized: Path):
    """Open ppocrv4_rec in ``win``, calibrate it on 4 rows and compare it with ``quantized``: the diff tab, its panes
    drawn. Call :func:`latency_fakes.fixed_latency` first."""
    open_file(win, PPOCR / "model.onnx")
    calibrate(qtbot, win)
    with qtbot.waitSignal(win.diffReady, timeout=540_000) as sig:
        win.compare_with(quantized)
    tab = sig.args[0]
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    settle()
    return tab


def outlined(errors) -> str | None:
    """The unit whose bar the Errors dock outlines (None: no bar), checked to be in view."""
    at = errors.selected_row()
    if at is None:
        return None
    assert at in errors.rows_in_view(), (at, errors.rows_in_view())
    return errors.rows[at].node


def calibrate_example(qtbot, win, open_file) -> None:
    """Open the bundled digits_cnn in ``win``, calibrate it on 16 rows of its calibration file and wait until the
    Errors dock shows its per-unit bars. Call a fake of :mod:`latency_fakes` first (fixed_latency)."""
    open_file(win, EXAMPLE_MODEL)
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, 16)
    win._on_spec_changed()
    run_ok(qtbot, win, win.act_calibrate.trigger)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=60_000)


def open_exported_tab(qtbot, win, path: Path, *, settled: bool = True):
    """View > Open Exported Model on ``path`` (as if just exported) in ``win``: the tab, once its graph is laid
    out and (``settled``) the events after it have run."""
    win._last_export = Path(path)
    tab = win.open_exported()
    assert tab is not None
    with qtbot.waitSignal(tab.canvas.layoutReady, timeout=300_000):
        pass
    if settled:
        settle()
    return tab
