"""Each unit's own noise (local SQNR) measured on float inputs (workbench.core.analysis.own_noise): ``analyze``'s
local column equals a direct computation, the unit's QDQ nodes cut out of the written model with onnx's own
Extractor and run alone in onnxruntime on the float model's values of its input (digits_cnn, real data). Derived
from the accumulated noise, three of its five units read "inf" (their output no noisier than their input)."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort
import pytest
from onnx import helper

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.executors import ThreadExecutor


def _run(proto: onnx.ModelProto, names: list[str], x: np.ndarray, feed_name: str, *, written: bool) -> list:
    """``names`` of ``proto`` on ``{feed_name: x}`` in batches of 8 rows (as the analysis runs them); ``written``:
    graph optimisations off (the Q -> DQ values as written)."""
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    have = {o.name for o in proto.graph.output}
    proto.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names if n not in have)
    opts = ort.SessionOptions()
    if written:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    parts = [sess.run(names, {feed_name: x[i:i + 8]}) for i in range(0, len(x), 8)]
    return [np.concatenate([p[k] for p in parts]) for k in range(len(names))]


def _sqnr(ref: np.ndarray, got: np.ndarray) -> float:
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    return 10 * math.log10(float(np.sum(ref ** 2)) / float(np.sum((ref - got) ** 2)))


#: unit -> (the float tensor its input Q -> DQ reads, its output as the QDQ model writes it, its float output)
UNITS = {
    "/f/f.0/Conv": ("input", "/f/f.2/Relu_output_0_dequantized", "/f/f.2/Relu_output_0"),
    "/f/f.3/Conv": ("/f/f.2/Relu_output_0", "/f/f.5/Relu_output_0_dequantized", "/f/f.5/Relu_output_0"),
    "/f/f.7/Conv": ("/f/f.6/MaxPool_output_0", "/f/f.8/Relu_output_0_dequantized", "/f/f.8/Relu_output_0"),
    "/f/f.9/AveragePool": ("/f/f.8/Relu_output_0", "/f/f.9/AveragePool_output_0_dequantized",
                           "/f/f.9/AveragePool_output_0"),
    "/head/head.2/Gemm": ("/head/head.0/Flatten_output_0", "logits", "logits"),  # writes float: no output pair
}


def _direct(float_path, written_path, x: np.ndarray) -> dict[str, float]:
    """Each unit of :data:`UNITS` alone: its nodes between its float input and its output, extracted from the
    written QDQ file (onnx.utils.Extractor), run unfused on the float model's input tensor, against the float
    model's output tensor (onnxruntime's default optimisations, as the analysis runs the float model)."""
    fp, qp = onnx.load(float_path), onnx.shape_inference.infer_shapes(onnx.load(written_path))  # Extractor's names
    floats = sorted({n for src, _q, out in UNITS.values() for n in (src, out) if n != "input"})
    values = dict(zip(floats, _run(fp, floats, x, "input", written=False), strict=True)) | {"input": x}
    out = {}
    for unit, (src, q, ref) in UNITS.items():
        one = onnx.utils.Extractor(qp).extract_model([src], [q])
        assert sum(n.op_type in ("Conv", "Gemm", "AveragePool") for n in one.graph.node) == 1  # the unit alone
        (got,) = _run(one, [q], values[src], src, written=True)
        out[unit] = _sqnr(values[ref], got)
    return out


def test_the_local_column_is_the_units_qdq_alone_on_float_inputs(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    model, calib = folder / "model_opset17.onnx", folder / "calib.npz"
    common = ["--data", str(calib), "--no-auto", "--no-latency-check"]
    out, written = tmp_path / "rows.json", tmp_path / "q.onnx"
    assert main(["analyze", str(model), *common, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "SQNR dB local dB" in text and "run alone on the float model's values of its inputs" in text
    assert main(["quantize", str(model), *common, "-o", str(written)]) == 0
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    assert set(rows) == set(UNITS)
    want = _direct(model, written, np.load(calib)["input"][:32])  # analyze measures 32 rows by default
    for unit, db in want.items():
        assert rows[unit]["local_sqnr_db"] == pytest.approx(db, rel=1e-9), unit
    # the figures are real: 39.7 to 51.7 dB, and the first Conv (reading the graph input) adds all its noise
    assert all(39 < db < 53 for db in want.values())
    assert rows["/f/f.0/Conv"]["local_sqnr_db"] == pytest.approx(rows["/f/f.0/Conv"]["sqnr_db"], rel=1e-9)


def test_derived_three_units_read_inf_measured_none(corpus):
    folder = corpus / "digits_cnn"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=16,
                          latency_check=False)
    graph = (result.float_model or model).proto.graph

    def local(**kw) -> dict[str, float]:
        rows = api.analyze(model, result, str(folder / "calib.npz"), samples=32, **kw)
        return {s.node: s.local_sqnr_db for s in api.local_sensitivity(result.plan, rows, graph=graph)}

    derived, measured = local(own_noise=False), local()
    assert sorted(n for n, v in derived.items() if v == math.inf) == [
        "/f/f.7/Conv", "/f/f.9/AveragePool", "/head/head.2/Gemm"]
    assert all(math.isfinite(v) for v in measured.values()) and set(measured) == set(derived)
    # shards of rows add up to the one pass (float64 sums in another order)
    sharded = local(executor=ThreadExecutor(2), shards=3)
    assert sharded == pytest.approx(measured, rel=1e-9)
