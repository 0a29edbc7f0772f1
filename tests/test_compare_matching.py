"""``compare`` on our own exports (float8, dynamic, weight-only int4) and onnxruntime's ``quantize_dynamic``:
which node became which, and per-tensor SQNR equal to an independent onnxruntime run of the same tensors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import workbench
from workbench.core import api
from workbench.core.inspection.diff_error import compare_models

EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example"
FLOAT, CALIB = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
SAMPLES = 24


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """digits_cnn exported by us with the float8, dynamic and weight-only int4 presets."""
    out = tmp_path_factory.mktemp("cmp")
    model = api.open_model(FLOAT)
    paths = {}
    for preset in ("fp8-e4m3", "dynamic-u8", "w4-block"):
        result = api.quantize(model, api.make_recipe(preset), data=str(CALIB), samples=32)
        paths[preset] = api.export(result, out / f"{preset}.onnx")
    return paths


def _sqnr(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(10 * np.log10(np.sum(a * a) / np.sum((a - b) ** 2)))


def _independent_sqnr(quant_path, float_tensor: str, quant_tensor: str) -> float:
    """SQNR of ``quant_tensor`` of the quantized file against ``float_tensor`` of the float model, both run
    by onnxruntime on the first SAMPLES calibration rows (the quantized file unoptimized)."""
    x = np.load(CALIB)["input"][:SAMPLES]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    f = ort.InferenceSession(api.add_outputs(onnx.load(str(FLOAT)), [float_tensor]).SerializeToString())
    q = ort.InferenceSession(api.add_outputs(onnx.load(str(quant_path)), [quant_tensor]).SerializeToString(), so)
    return _sqnr(f.run([float_tensor], {"input": x})[0], q.run([quant_tensor], {"input": x})[0])


def test_float8_relu_written_as_max_is_matched_to_its_max(exports):
    """Our float8 export writes each ReLU as Max(x, 0) under the ReLU's name. It was listed as folded into
    the Conv and as added, and the float ReLU output was compared with the Conv output before it:
    -1.73 dB where onnxruntime measures 24.87 dB on 32 samples."""
    qp = onnx.load(str(exports["fp8-e4m3"]))
    d = compare_models(api.open_model(FLOAT), qp, str(CALIB), samples=SAMPLES)
    relus = [n.name for n in onnx.load(str(FLOAT)).graph.node if n.op_type == "Relu"]
    assert {m.float_node: m.quant_op for m in d.matches if m.float_op == "Relu"} == dict.fromkeys(relus, "Max")
    assert len(d.matches) == 10 and d.folded == [] and d.added == [] and d.removed == []
    assert d.tensors["/f/f.2/Relu_output_0"] == "/f/f.2/Relu_output_0_dequantized"
    want = _independent_sqnr(exports["fp8-e4m3"], "/f/f.2/Relu_output_0", "/f/f.2/Relu_output_0_dequantized")
    assert d.sqnr["/f/f.2/Relu_output_0"] == pytest.approx(want, abs=1e-6)
    assert 20.0 < want < 35.0
    assert len(d.sqnr) == 10 and min(d.sqnr.values()) > 15.0
