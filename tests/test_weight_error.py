"""Per-unit weight quantization error against onnx.reference's DequantizeLinear and numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from test_noise_split import quantized

from workbench.core.analysis.weight_error import weight_errors


def reference_dequantized(qp, node_name: str, position: int) -> np.ndarray:
    """onnx.reference's value of the DequantizeLinear feeding input ``position`` of ``node_name``."""
    producer = {o: n for n in qp.graph.node for o in n.output}
    node = next(n for n in qp.graph.node if n.name == node_name)
    dq = producer[node.input[position]]
    inits = {t.name: t for t in qp.graph.initializer}
    one = helper.make_model(helper.make_graph([dq], "dq", [], [helper.make_empty_tensor_value_info(dq.output[0])],
                                              [inits[x] for x in dq.input if x]),
                            opset_imports=[helper.make_opsetid("", 21)])
    return ReferenceEvaluator(one).run(None, {})[0]


def sqnr(w, d) -> float:
    w, e = w.astype(np.float64), w.astype(np.float64) - d.astype(np.float64)
    return 10 * math.log10(float(np.sum(w * w)) / float(np.sum(e * e)))


def test_tensor_and_worst_channel_match_onnx_reference(tmp_path):
    rng = np.random.default_rng(0)
    w1 = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    w1[2] *= 0.01  # a small-range channel: 16 times worse relative rounding if the grid were shared
    w2 = rng.normal(size=(4, 5)).astype(np.float32)
    model, result, _, _ = quantized(tmp_path, w1, w2)
    errs = {e.node: e for e in weight_errors(result.plan, model.proto, result.proto)}
    assert set(errs) == {"conv", "matmul"}
    for node, w, axis in (("conv", w1, 0), ("matmul", w2, 1)):
        d = reference_dequantized(result.proto, node, 1)
        e = errs[node]
        assert e.sqnr_db == pytest.approx(sqnr(w, d), abs=1e-9)
        per = [sqnr(np.take(w, c, axis=axis), np.take(d, c, axis=axis)) for c in range(w.shape[axis])]
        assert e.channels == w.shape[axis] and e.worst_channel == int(np.argmin(per))
        assert e.worst_channel_db == pytest.approx(min(per), abs=1e-9)


def test_dead_channels_are_not_ranked_worst(tmp_path):
    """A channel of 1e-9 weights (its grid raised so an int32 bias fits) rounds to 0 dB: not the worst."""
    rng = np.random.default_rng(1)
    w1 = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    w1[1] = 1e-9
    model, result, _, _ = quantized(tmp_path, w1, rng.normal(size=(4, 5)).astype(np.float32))
    conv = next(e for e in weight_errors(result.plan, model.proto, result.proto) if e.node == "conv")
    d = reference_dequantized(result.proto, "conv", 1)
    live = [c for c in range(4) if c != 1]
    assert conv.worst_channel in live
    assert conv.worst_channel_db == pytest.approx(min(sqnr(w1[c], d[c]) for c in live), abs=1e-9)


def test_analyze_prints_the_weight_column_and_json(corpus, tmp_path, capsys):
    import json

    from workbench.cli import main
    from workbench.core import api

    folder = corpus / "digits_cnn"
    out = tmp_path / "rows.json"
    assert main(["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--samples", "8",
                 "--eval-samples", "4", "--no-auto", "--no-latency-check", "--json", str(out)]) == 0
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=8)
    expected = {e.node: e for e in api.weight_errors(result.plan, model.proto, result.proto)}
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    assert {n for n, r in rows.items() if "weight" in r} == set(expected) and len(expected) == 4
    for node, e in expected.items():
        assert rows[node]["weight"] == e.to_json()
    text = capsys.readouterr().out
    worst = min(expected.values(), key=lambda e: e.sqnr_db)
    assert any(x.startswith(worst.node) and f" {worst.sqnr_db:9.2f} " in x for x in text.splitlines())
