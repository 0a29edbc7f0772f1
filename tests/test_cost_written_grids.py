"""``cost`` of a plan (a project, a recipe, the app's Cost dock, autotune's curve) counts each input on the grid
the QDQ writer writes for it, as ``cost`` of the written file reads it. It counted each unit at its own activation
setting: where a tensor's producer and a reader ask for different dtypes the writer gives the tensor one grid (the
producer's request, else the first reader's), the second input of a MatMul of two activations was counted at the
unit's weight setting, and a unit kept float counted 32 x 32 though it reads the dequantized values of a pair.
digits_transformer's autotuned recipe (``autotune --min-score 45`` of the README) counted 111,869,952 BOPs for the
recipe and 91,291,648 for the file it writes."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.cost import data_sample, model_cost
from workbench.core.tuning.autotune import plan_cost

FIELDS = ("node", "op_type", "macs", "weight_bits", "activation_bits", "bops", "bops_kernel", "kernel_bits",
          "memory_bits")


def _tiny(folder) -> tuple[str, str]:
    """x [1, 4, 8] -> A (MatMul W1) -> t; x -> A2 (MatMul W2) -> u [1, 4, 4]; C = MatMul(u, t); B = MatMul(t, W3);
    D = MatMul(c, W4): a graph input read by two units, a tensor written by one unit and read by two, a MatMul of
    two activations. Returns the model's and its calibration data's paths."""
    rng = np.random.default_rng(0)

    def weight(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [helper.make_node("MatMul", ["x", "W1"], ["t"], name="A"),
             helper.make_node("MatMul", ["x", "W2"], ["u"], name="A2"),
             helper.make_node("MatMul", ["u", "t"], ["c"], name="C"),
             helper.make_node("MatMul", ["t", "W3"], ["b"], name="B"),
             helper.make_node("MatMul", ["c", "W4"], ["d"], name="D")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4, 6]),
                               helper.make_tensor_value_info("d", TensorProto.FLOAT, [1, 4, 5])],
                              [weight("W1", [8, 8]), weight("W2", [8, 4]), weight("W3", [8, 6]),
                               weight("W4", [8, 5])])
    model, data = folder / "m.onnx", folder / "calib.npz"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    np.savez(data, x=rng.standard_normal((8, 1, 4, 8)).astype(np.float32))
    return str(model), str(data)


def _rows(rep) -> list[dict]:
    return [{k: r[k] for k in FIELDS} for r in rep.to_json()["rows"]]


INT16 = {"activation": {"dtype": "int16"}}
# MACs: A 4*8*8 = 256, A2 4*4*8 = 128, C 4*8*4 = 128, B 4*6*8 = 192, D 4*5*8 = 160
CASES = {
    # A2 asks int16 for x, whose first reader A asks uint8: A2 reads x at 8 bits (counted 8 x 16 before);
    # u is written by A2 on int16, so C reads its first input at 16 (counted 8 x 8 before: its weight setting);
    # B asks int16 for t, which A writes on uint8: B reads 8 (counted 8 x 16 before). 75,776 BOPs before.
    "int16-readers": ({"A2": INT16, "B": INT16}, [], {"A": (8, 8), "A2": (8, 8), "C": (8, 16), "B": (8, 8),
                                                      "D": (8, 8)}, 63_488),
    # B kept float reads t's uint8 pair (C reads it too), so its activation is 8 bits, its weight 32 (32 x 32
    # before: 196,608 BOPs for B, 215,040 in all)
    "float-reader": ({"A2": INT16}, ["B"], {"A": (8, 8), "A2": (8, 8), "C": (8, 16), "B": (32, 8), "D": (8, 8)},
                     256 * 64 + 128 * 64 + 128 * 128 + 192 * 256 + 160 * 64),
}


@pytest.mark.parametrize("case", CASES)
def test_plan_counts_the_grids_the_file_reads(tmp_path, case):
    overrides, exclude, bits, bops = CASES[case]
    path, data = _tiny(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8", overrides=overrides, exclude=exclude)
    result = api.quantize(model, recipe, data=data, guard=False)
    written = tmp_path / "q.onnx"
    onnx.save(result.proto, str(written))

    planned = api.plan_cost(model, result.plan, data)
    as_file, _ = api.quantized_file_cost(api.open_model(written), data)
    assert {r.node: (r.weight_bits, r.activation_bits) for r in as_file.rows} == bits  # the file, as written
    assert _rows(planned) == _rows(as_file)
    assert planned.bops == as_file.bops == bops
    assert planned.bops_kernel == as_file.bops_kernel
    # autotune's curve counts the same
    base = model_cost(model.proto, input_values=data_sample(model, data))
    assert plan_cost(base, result.plan, model.proto.graph)[1] == bops


def _cost_json(args, capsys) -> dict:
    assert main(["cost", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("auto", [False, True])
def test_cost_of_a_mixed_project_is_the_cost_of_its_file(corpus, tmp_path, capsys, auto):
    """digits_transformer with int16 activations asked on a few units and one unit kept float: ``cost PROJECT``
    and ``cost WRITTEN.onnx`` give every node the same bits and BOPs. With the recipe as given (``--no-auto``) the
    int16 units read tensors the 8-bit Mul units write: 12,341,248 BOPs, counted 25,972,736 for the project
    before. With the recipe choice (compute-only: the element-wise units stay float) layer 0's attention MatMul
    is the first reader of both its inputs, both on its int16 grids: 49,827,840 BOPs, counted 49,565,696 before
    (its second input at the unit's 8-bit weight setting)."""
    d = corpus / "digits_transformer"
    model, calib = str(d / "model_opset17.onnx"), str(d / "calib.npz")
    att0, att1 = "/enc/layers.0/self_attn/", "/enc/layers.1/self_attn/"
    recipe = tmp_path / "mixed.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "exclude": ["/enc/layers.1/linear1/MatMul"], "overrides": {
        f"{att0}MatMul_1": INT16, "/enc/layers.0/linear2/MatMul": INT16, f"{att1}Mul_2": INT16}}))
    out, project = tmp_path / "q.onnx", tmp_path / "q.wbproj"
    assert main(["quantize", model, "--data", calib, "--samples", "8", "--recipe", str(recipe), "--no-latency-check",
                 *([] if auto else ["--no-auto"]), "-o", str(out), "--save-project", str(project)]) == 0
    capsys.readouterr()
    planned, as_file = _cost_json([str(project)], capsys), _cost_json([str(out), "--data", calib], capsys)
    assert planned["rows"] == as_file["rows"]
    assert planned["totals"] == as_file["totals"]
    bits = {r["node"]: (r["weight_bits"], r["activation_bits"]) for r in as_file["rows"]}
    if auto:
        assert bits[f"{att0}MatMul_1"] == (16, 16)  # a MatMul of two activations, both on its int16 grids
        assert bits["/enc/layers.0/linear2/MatMul"] == (8, 16)
        assert bits[f"{att1}MatMul_1"] == (8, 8)
        assert bits["/enc/layers.1/linear1/MatMul"] == (32, 32)  # kept float; no quantized unit reads its input
        assert as_file["totals"]["bops"] == 49_827_840
    else:  # asked int16, read on the uint8 grids the Mul units write
        assert bits[f"{att0}MatMul_1"] == (8, 8)
        assert bits["/enc/layers.0/linear2/MatMul"] == (8, 8)
        assert bits[f"{att1}MatMul_1"] == (16, 8)  # its second input is Mul_2's int16 output
        assert bits["/enc/layers.1/linear1/MatMul"] == (32, 8)  # kept float, reads LayerNorm's uint8 pair
        assert as_file["totals"]["bops"] == 12_341_248
