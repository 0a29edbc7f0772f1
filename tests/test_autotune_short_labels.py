"""The core ``autotune()`` refuses a ``gt_label`` shorter than the eval inputs (with ``eval_samples`` up to
the label count it paired the labels with the first rows and scored top1 on them); the CLI refused it
already."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core import api
from workbench.core.errors import DataError
from workbench.core.tuning.autotune import autotune


def test_core_autotune_refuses_short_labels(corpus, tmp_path, monkeypatch):
    cnn = corpus / "digits_cnn"
    ev = np.load(cnn / "eval.npz")
    short = tmp_path / "short.npz"
    np.savez(short, input=ev["input"][:20], gt_label=ev["gt_label"][:10])
    model = api.open_model(str(cnn / "model_opset17.onnx"))
    quantized = []
    monkeypatch.setattr("workbench.core.tuning.autotune.quantize",
                        lambda *a, **k: quantized.append(1) or pytest.fail("quantized before the check"))
    with pytest.raises(DataError) as err:
        autotune(model, api.make_recipe("cpu-u8s8"), data=str(cnn / "calib.npz"), eval_data=str(short),
                 metric="top1", max_drop=0.01, samples=8, eval_samples=10)
    assert str(err.value) == (
        f"{short}: array 'gt_label' has 10 labels for 20 rows of inputs. Give one label per input row, in the "
        "same order (metric top1 pairs row i with gt_label[i]).")
    assert quantized == []


def test_core_autotune_takes_labels_of_the_right_length(corpus, tmp_path):
    """The same rows with all 20 labels pass the check (the eval set holds them, row i with label i)."""
    from workbench.core.tuning.autotune import make_eval_set

    cnn = corpus / "digits_cnn"
    ev = np.load(cnn / "eval.npz")
    full = tmp_path / "full.npz"
    np.savez(full, input=ev["input"][:20], gt_label=ev["gt_label"][:20])
    got = make_eval_set(api.open_model(str(cnn / "model_opset17.onnx")), str(full), None, "top1")
    assert np.array_equal(got.labels["gt_label"], ev["gt_label"][:20]) and len(got.feeds) == 20
