"""``compare`` diffs the quantized file against the user's float file as written, not our prepared copy.

Opening a float model folds Conv -> BatchNormalization and Conv -> Mul / Add by per-channel constants into
the Conv. onnxruntime's ``quantize_static`` keeps those nodes; the diff made against the folded graph said
they were "added by the quantizer" (ppocrv4_rec: "348 nodes matched ... 9 removed, 62 added") and compared
the float tensor after a folded Mul / Add with the quantized Conv output before it (-3.33 dB instead of
31 dB on the model below). A float file with an unnamed node (ppocrv4_rec's 420 unnamed Constants) took
that path.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static
from qdq_helpers import conv_bn_mul_add_model

from workbench.core import api
from workbench.core.inspection.diff_error import compare_models

ROWS = 8

class _Rows(CalibrationDataReader):
    def __init__(self, x: np.ndarray):
        self.rows = iter(x)

    def get_next(self):
        row = next(self.rows, None)
        return None if row is None else {"x": row[None]}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The float file, its calibration rows and onnxruntime's default quantize_static QDQ file of it."""
    out = tmp_path_factory.mktemp("as_written")
    fpath, data, qpath = out / "small.onnx", out / "calib.npz", out / "small_ort.onnx"
    onnx.save(conv_bn_mul_add_model(), str(fpath))
    x = np.random.default_rng(1).normal(size=(ROWS, 3, 8, 8)).astype(np.float32)
    np.savez(data, x=x)
    quantize_static(str(fpath), str(qpath), _Rows(x[:4]), quant_format=QuantFormat.QDQ)
    return fpath, data, qpath


def _independent_sqnr(fpath, qpath, data, float_tensor: str, quant_tensor: str) -> float:
    """SQNR (dB) of ``quant_tensor`` of the quantized file against ``float_tensor`` of the float file, both
    run by onnxruntime row by row on every row of ``data`` (the quantized file unoptimized)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    f = ort.InferenceSession(api.add_outputs(onnx.load(str(fpath)), [float_tensor]).SerializeToString())
    q = ort.InferenceSession(api.add_outputs(onnx.load(str(qpath)), [quant_tensor]).SerializeToString(), so)
    x = np.load(data)["x"]
    a = np.concatenate([f.run([float_tensor], {"x": r[None]})[0] for r in x]).astype(np.float64)
    b = np.concatenate([q.run([quant_tensor], {"x": r[None]})[0] for r in x]).astype(np.float64)
    return float(10 * np.log10(np.sum(a * a) / np.sum((a - b) ** 2)))


def test_nodes_onnxruntime_kept_are_matched_not_added(files):
    """onnxruntime keeps bn1, mul2 and add2 and fuses the two Relu into their QuantizeLinear: 6 matched (the
    float file's 9 nodes less its Constant and the 2 Relu the quantizer removed), 2 fused, 0 added; was
    "3 nodes matched ... 2 folded or fused, 0 removed, 3 added" (bn1, mul2, add2)."""
    fpath, data, qpath = files
    float_nodes = [n.name for n in onnx.load(str(fpath)).graph.node if n.op_type != "Constant"]
    quant_nodes = {n.name for n in onnx.load(str(qpath)).graph.node}
    kept = [n for n in float_nodes if n in quant_nodes]
    assert kept == ["conv1", "bn1", "conv2", "mul2", "add2", "flat"]  # what onnxruntime really did

    d = compare_models(api.open_model(fpath), onnx.load(str(qpath)), str(data))
    c = d.counts()
    assert (len(d.matches), c["folded"], c["removed"], c["added"]) == (len(kept), 2, 0, 0)
    assert [(m.float_node, m.quant_node) for m in d.matches] == [(n, n) for n in kept]
    assert d.folded == [("relu1", "Relu"), ("relu2", "Relu")]
    assert d.folded_into == {"relu1": "bn1", "relu2": "add2"}
    assert d.summary().endswith("2 folded or fused, 0 removed, 0 added")
    # the float tensors after the kept BatchNormalization / Mul / Add are compared with the same tensors of the
    # quantized file (r2 was compared with the Conv output before the Mul and Add: -3.33 dB)
    assert d.tensors["r2"] == "r2_DequantizeLinear_Output" and d.tensors["m2"] == "m2_DequantizeLinear_Output"
    assert d.tensors["c1"] == "c1_DequantizeLinear_Output"
    for ft in ("r2", "m2", "c1", "r1"):
        assert d.sqnr[ft] == pytest.approx(_independent_sqnr(fpath, qpath, data, ft, d.tensors[ft]), abs=1e-4)  # onnxruntime fuses what is not tapped
    assert d.sqnr["r2"] > 20


def test_our_export_folds_them_into_the_conv(files, tmp_path):
    """Our export folds bn1 into conv1 and mul2, add2 into conv2 (as opening the model does): the diff against
    the file as written lists them folded into those Conv, with nothing added or removed, and compares the
    float tensor after the folded chain (a2) with the quantized Conv's output."""
    fpath, data, _ = files
    model = api.open_model(fpath)
    qpath = api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(data)), tmp_path / "ours.onnx")
    d = compare_models(model, onnx.load(str(qpath)), str(data))
    c = d.counts()
    assert [m.float_node for m in d.matches] == ["conv1", "relu1", "conv2", "relu2", "flat"]
    assert (c["folded"], c["removed"], c["added"]) == (3, 0, 0)
    assert d.folded == [("bn1", "BatchNormalization"), ("mul2", "Mul"), ("add2", "Add")]
    assert d.folded_into == {"bn1": "conv1", "mul2": "conv2", "add2": "conv2"}
    assert "c2" not in d.tensors and "m2" not in d.tensors and d.producers["a2"] == "conv2"
    assert d.sqnr["a2"] == pytest.approx(_independent_sqnr(fpath, qpath, data, "a2", d.tensors["a2"]), abs=1e-6)


@pytest.mark.slow
def test_ppocrv4_rec_onnxruntime_qdq_adds_nothing(corpus, tmp_path):
    """ppocrv4_rec (420 unnamed Constant nodes, opset 12, 6 BatchNormalization and 56 Mul / Add our preparation
    folds) quantized by onnxruntime's default quantize_static QDQ: all 440 non-Constant float nodes are
    matched (410) or fused into a QuantizeLinear (28 Clip, 2 Relu); was "348 nodes matched ... 30 folded or
    fused, 9 removed, 62 added" (the 62 folded nodes added, the 9 Shape / Flatten / Reshape our opset 13
    upgrade puts around the 3 Softmax removed)."""
    model_dir = corpus / "ppocrv4_rec"
    fpath, qpath = model_dir / "model.onnx", tmp_path / "ppocr_ort.onnx"
    x = np.load(model_dir / "calib.npz")
    x = x[x.files[0]][:4]
    quantize_static(str(fpath), str(qpath), _Rows(x), quant_format=QuantFormat.QDQ)
    raw = onnx.load(str(fpath))
    d = compare_models(api.open_model(fpath), onnx.load(str(qpath)))
    c = d.counts()
    assert sum(n.op_type != "Constant" for n in raw.graph.node) == 440
    assert (len(d.matches), c["folded"], c["removed"], c["added"]) == (410, 30, 0, 0)
    assert sorted({op for _, op in d.folded}) == ["Clip", "Relu"]
    matched = {m.float_node for m in d.matches}
    assert {"p2o.BatchNormalization.0", "p2o.Mul.0", "p2o.Add.2"} <= matched
    assert all(m.float_node == m.quant_node for m in d.matches)
