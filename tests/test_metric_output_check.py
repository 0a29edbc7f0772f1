"""A built-in metric that cannot read the model's first output (detection_scores on a classifier's [N, C]
logits, top1 on an [N] output) is refused from the declared shape, in one line naming the model, the
output and its shape, before report / autotune quantize or evaluate runs a batch; the report's default
metric is cosine, not top1, for an output without a class axis."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis import evaluate as evaluate_mod
from workbench.core.errors import DataError
from workbench.core.report.collect import default_metric

ROWS = 12


def _model(tmp_path, argmax: bool = False):
    """x [N, 6] -> Gemm -> logits [N, 5] (-> ArgMax -> cls [N] int64 with ``argmax``)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Gemm", ["x", "G"], ["logits"], name="fc", transB=1)]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5])
    if argmax:
        nodes.append(helper.make_node("ArgMax", ["logits"], ["cls"], name="argmax", axis=1, keepdims=0))
        out = helper.make_tensor_value_info("cls", TensorProto.INT64, ["N"])
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])], [out],
                          [numpy_helper.from_array(rng.normal(size=(5, 6)).astype(np.float32), "G")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    x = rng.random((ROWS, 6)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    np.savez(tmp_path / "eval.npz", x=x, gt_label=np.arange(ROWS) % 5)
    return path, tmp_path / "calib.npz", tmp_path / "eval.npz"


def _boom(*_a, **_k):
    raise AssertionError("the job ran before the metric was checked against the model")


def _errors(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]


def test_report_detection_scores_on_a_classifier(tmp_path, capsys, monkeypatch):
    model, calib, ev = _model(tmp_path)
    monkeypatch.setattr(api, "quantize", _boom)
    monkeypatch.setattr(api, "choose_recipe", _boom)
    out = tmp_path / "r.html"
    code = main(["report", str(model), "--data", str(calib), "--eval", str(ev), "--metric", "detection_scores",
                 "-o", str(out)])
    assert code == 2 and _errors(capsys) == [
        f"error: {model}: metric detection_scores expects a first output [N, 4 + classes, anchors], but 'logits' "
        "has shape [N, 5]. Use it on a YOLO-style detector output without NMS, or pick cosine / output_sqnr."]
    assert not out.exists()


def test_autotune_detection_scores_on_a_classifier(tmp_path, capsys, monkeypatch):
    model, calib, ev = _model(tmp_path)
    monkeypatch.setattr(api, "autotune", _boom)
    code = main(["autotune", str(model), "--data", str(calib), "--eval", str(ev), "--metric", "detection_scores",
                 "--max-drop", "0", "-o", str(tmp_path / "a.onnx")])
    err = _errors(capsys)
    assert code == 2 and len(err) == 1 and "'logits' has shape [N, 5]" in err[0]


def test_report_top1_on_an_output_without_class_axis(tmp_path, capsys, monkeypatch):
    model, calib, ev = _model(tmp_path, argmax=True)
    monkeypatch.setattr(api, "quantize", _boom)
    monkeypatch.setattr(api, "choose_recipe", _boom)
    code = main(["report", str(model), "--data", str(calib), "--eval", str(ev), "--metric", "top1",
                 "-o", str(tmp_path / "r.html")])
    err = _errors(capsys)
    assert code == 2 and len(err) == 1 and "'cls' has shape [N] (no class axis)" in err[0] and str(model) in err[0]


def test_default_metric_is_cosine_without_class_axis(tmp_path):
    model, _, ev = _model(tmp_path, argmax=True)
    assert default_metric(api.open_model(str(model)), str(ev)) == "cosine"
    model, _, ev = _model(tmp_path)
    assert default_metric(api.open_model(str(model)), str(ev)) == "top1"


def test_evaluate_refuses_before_running(tmp_path, monkeypatch):
    model, _, ev = _model(tmp_path)
    monkeypatch.setattr(evaluate_mod, "_run", _boom)
    with pytest.raises(DataError, match=r"m\.onnx: metric detection_scores expects .* 'logits' has shape \[N, 5\]"):
        evaluate_mod.evaluate(str(model), str(model), str(ev), metric="detection_scores")
