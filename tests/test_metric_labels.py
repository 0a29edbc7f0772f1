"""Labels a built-in metric cannot score (top1 with a short gt_label, string or fractional labels) are
refused in one line naming the data file and the array, before report / autotune quantize or analyse
anything; integer-valued float labels still score (against numpy on onnxruntime's outputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis import evaluate as evaluate_mod
from workbench.core.analysis.metrics import top1
from workbench.core.errors import DataError
from workbench.core.report import collect

ROWS = 24


def _classifier(path: Path) -> Path:
    """x [N, 3, 6, 6] -> Conv -> GlobalAveragePool -> Flatten -> Gemm -> logits [N, 5]."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(8, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.normal(size=(5, 8)).astype(np.float32), "G"),
             numpy_helper.from_array(rng.normal(size=(5,)).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "G", "b"], ["logits"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 6])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _x() -> np.ndarray:
    return np.random.default_rng(1).random((ROWS, 3, 6, 6)).astype(np.float32)


def _files(tmp_path: Path, labels) -> tuple[Path, Path, Path]:
    model = _classifier(tmp_path / "m.onnx")
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=_x())
    ev = tmp_path / "eval.npz"
    np.savez(ev, x=_x(), gt_label=labels)
    return model, calib, ev


BAD = {
    "short": (np.arange(10) % 5, "has 10 labels for 24 rows"),
    "words": (np.array(["cat", "dog"] * 12), "holds strings"),
    "digit_strings": (np.array([str(i % 5) for i in range(ROWS)]), "holds strings"),
    "fractions": (np.arange(ROWS) % 5 + 0.5, "holds 0.5 at row 0, not a whole number"),
    "negative": (np.array([0, 1, -1] + [2] * (ROWS - 3)), "holds -1 at row 2"),
}


def _boom(*_a, **_k):
    raise AssertionError("the job ran before the labels were checked")


@pytest.mark.parametrize("case", sorted(BAD))
def test_report_refuses_bad_labels_before_quantizing(tmp_path, capsys, monkeypatch, case):
    labels, says = BAD[case]
    model, calib, ev = _files(tmp_path, labels)
    monkeypatch.setattr(api, "quantize", _boom)
    monkeypatch.setattr(api, "choose_recipe", _boom, raising=False)
    out = tmp_path / "r.html"
    for metric in (["--metric", "top1"], []):  # given, and the report's default (top1 with gt_label)
        code = main(["report", str(model), "--data", str(calib), "--eval", str(ev), *metric, "-o", str(out)])
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
        assert code == 2 and len(err) == 1, err
        assert str(ev) in err[0] and "'gt_label'" in err[0] and says in err[0]
        assert "Fix the metric function" not in err[0]
        assert not out.exists()


@pytest.mark.parametrize("case", ["short", "words"])
def test_autotune_refuses_bad_labels_before_running(tmp_path, capsys, monkeypatch, case):
    labels, says = BAD[case]
    model, calib, ev = _files(tmp_path, labels)
    monkeypatch.setattr(api, "autotune", _boom)
    out = tmp_path / "a.onnx"
    code = main(["autotune", str(model), "--data", str(calib), "--eval", str(ev), "--max-drop", "0.01",
                 "-o", str(out)])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(err) == 1 and str(ev) in err[0] and says in err[0]
    assert not out.exists()


@pytest.mark.parametrize("case", ["short", "words"])
def test_evaluate_refuses_bad_labels_before_running(tmp_path, monkeypatch, case):
    labels, says = BAD[case]
    model, _, ev = _files(tmp_path, labels)
    monkeypatch.setattr(evaluate_mod, "_run", _boom)
    with pytest.raises(DataError) as info:
        evaluate_mod.evaluate(str(model), str(model), str(ev), metric="top1")
    assert str(ev) in info.value.message and says in info.value.message


def test_collect_report_checks_labels_before_the_analysis(tmp_path, monkeypatch):
    model, calib, ev = _files(tmp_path, BAD["short"][0])
    prepared = api.open_model(str(model))
    result = api.quantize(prepared, api.make_recipe("cpu-u8s8"), data=str(calib))
    monkeypatch.setattr(collect, "analyze", _boom)
    with pytest.raises(DataError, match="has 10 labels for 24 rows"):
        collect.collect_report(prepared, result, str(ev), metric=None)


def test_whole_float_labels_score_as_classes(tmp_path):
    """gt_label 3.0 is class 3: top1 as numpy computes it from onnxruntime's float outputs."""
    labels = (np.arange(ROWS) % 5).astype(np.float32)
    model, _, ev = _files(tmp_path, labels)
    rep = evaluate_mod.evaluate(str(model), str(model), str(ev), metric="top1")
    logits = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": _x()})[0]
    assert rep.float_metric == pytest.approx(float(np.mean(logits.argmax(1) == labels.astype(int))))


def test_top1_in_process_names_string_labels():
    with pytest.raises(DataError, match="integer class indices"):
        top1({"y": np.eye(3)}, {"gt_label": np.array(["a", "b", "c"])})


def test_check_metric_labels_leaves_label_free_metrics_alone():
    from workbench.core.analysis.metrics import check_metric_labels

    check_metric_labels("cosine", {}, 5, "e.npz")
    check_metric_labels(lambda o, b: 0.0, {"gt_label": np.array(["x"])}, 5, "e.npz")
    with pytest.raises(DataError, match="e.npz: metric top1 needs a 'gt_label' array"):
        check_metric_labels(top1, {"gt_box": np.zeros(5)}, 5, "e.npz")
