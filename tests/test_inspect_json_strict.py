"""``inspect --json`` prints strict JSON: a model with a NaN or infinite scale printed Python's ``NaN`` /
``Infinity`` literals, which jq and other JSON readers refuse."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


def _refuse(literal: str):
    raise ValueError(f"not JSON: {literal}")


def test_inspect_json_with_non_finite_scales_is_strict(tmp_path, capsys):
    inits = [numpy_helper.from_array(np.array(np.nan, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "z"),
             numpy_helper.from_array(np.array([np.inf, 0.5], np.float32), "ws"),
             numpy_helper.from_array(np.ones((2, 2), np.int8), "w")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], name="dqw", axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "nan_scale.onnx"
    onnx.save(model, str(path))
    assert main(["inspect", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=_refuse)
    params = {p["tensor"]: p for p in doc["quantization_parameters"]}
    assert (params["xq"]["scale"], params["xq"]["scale_min"], params["xq"]["scale_max"]) == ("nan", "nan", "nan")
    assert (params["w"]["scale"], params["w"]["scale_min"], params["w"]["scale_max"]) == (["inf", 0.5], 0.5, "inf")
