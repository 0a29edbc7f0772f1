"""compare holds the tapped tensors of at most TAP_BUDGET bytes of rows at a time.

Every matched tensor of both models is an output of one run, so a batch of 8 rows of ppocrv4_rec (about
330 MB of taps a row) held 2.6 GB: compare_models peaked at 2848 MiB on 8 rows (605 MiB in row slices),
and the in-app comparison of test_diff_list_narrow set the test process's peak at 3.3 GiB. A batch now runs
in slices of rows whose taps fit the budget: a row's bytes come from the sessions' output shapes, or from a
first run of one row when a shape is not fixed.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from workbench.core import api
from workbench.core.inspection import diff_error


@pytest.fixture
def digits(corpus, tmp_path):
    folder = corpus / "digits_cnn"
    model = api.open_model(folder / "model_opset17.onnx")
    out = tmp_path / "q.onnx"
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=16), out)
    return model, api.open_model(out).proto, str(folder / "calib.npz")


def _rows_run(monkeypatch, model, qp, data, budget: int) -> tuple[list[int], dict]:
    """Rows of each feed the two sessions ran, and the SQNRs, with ``TAP_BUDGET = budget``."""
    monkeypatch.setattr(diff_error, "TAP_BUDGET", budget)
    real, rows = diff_error._run, []

    def spy(sess, names, feed, which):
        rows.append(len(next(iter(feed.values()))))
        return real(sess, names, feed, which)

    monkeypatch.setattr(diff_error, "_run", spy)
    diff = api.compare_models(model, qp, data, samples=16)
    return rows, diff.sqnr


def test_batches_run_in_row_slices_that_fit_the_budget(digits, monkeypatch):
    model, qp, data = digits
    rows, whole = _rows_run(monkeypatch, model, qp, data, 1 << 40)
    assert rows == [8, 8, 8, 8]  # two batches of ANALYSIS_BATCH rows, each run by both models, as before
    rows, sliced = _rows_run(monkeypatch, model, qp, data, 1)  # not one row fits: one row a run
    assert rows == [1] * 32
    assert sliced.keys() == whole.keys() and len(whole) > 5
    for k, v in whole.items():
        assert sliced[k] == pytest.approx(v, abs=1e-4), k  # the same rows: the same figures


def _session(*outputs):
    return SimpleNamespace(get_outputs=lambda: [SimpleNamespace(name=n, shape=s, type=t) for n, s, t in outputs])


def test_row_bytes_from_the_output_shapes():
    sess = _session(("a", ["N", 3, 4], "tensor(float)"), ("b", [1, 10], "tensor(uint8)"),
                    ("c", ["N", 2], "tensor(double)"))
    assert diff_error._row_bytes(sess, ["a", "b"]) == 3 * 4 * 4 + 10
    assert diff_error._row_bytes(sess, ["a", "c"]) == 48 + 16
    dynamic = _session(("a", ["N", "W", 4], "tensor(float)"))
    assert diff_error._row_bytes(dynamic, ["a"]) == 0  # not fixed: measured on a first run of one row
    assert diff_error._row_bytes(_session(("s", ["N"], "seq(tensor(float))")), ["s"]) == 0


def test_row_slices_start_with_one_row_when_a_row_size_is_unknown(monkeypatch):
    monkeypatch.setattr(diff_error, "TAP_BUDGET", 300)
    batch = {"x": np.arange(10)[:, None], "scale": np.float32(2)}
    per_row = [0]
    sizes = []
    for part in diff_error._row_slices(batch, 10, per_row):
        sizes.append(len(part["x"]))
        assert part["scale"] == np.float32(2)  # an input without the row axis is passed whole
        per_row[0] = 100  # what the caller measures after the first run
    assert sizes == [1, 3, 3, 3]
    assert [len(p["x"]) for p in diff_error._row_slices(batch, 10, [7])] == [10]  # 70 bytes of taps fit
