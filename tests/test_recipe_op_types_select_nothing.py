"""A recipe whose ``op_types`` names only op types the model lacks is refused in one line naming the field, its
entries and the model's op types (it warned, then wrote a model with '0 of 0 node units quantized' and exited 0).
``"op_types": []`` asks for an unquantized model and is written; a plan that quantizes nothing because the
recipe excludes every node, or with some entries of ``op_types`` present, is written as before."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core.errors import RecipeError
from workbench.core.model.load import load_model
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.recipe import Recipe


def _model(folder) -> str:
    """X [N, 4] -> MatMul (W [4, 3]) -> Relu -> Y."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "W")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"], name="mm"), helper.make_node("Relu", ["H"], ["Y"], name="r")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])], [w])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    np.savez(folder / "calib.npz", X=np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    return str(path)


def _quantize(tmp_path, recipe: dict) -> int:
    model = _model(tmp_path)
    (tmp_path / "r.json").write_text(json.dumps(recipe))
    return main(["quantize", model, "--data", str(tmp_path / "calib.npz"), "--recipe", str(tmp_path / "r.json"),
                 "-o", str(tmp_path / "q.onnx"), "--no-latency-check", "--no-auto"])


def test_op_types_the_model_lacks_are_an_error_naming_the_model_s_op_types(tmp_path, capsys):
    """The line names the --recipe file (it did not: a user with several recipes could not tell which)."""
    assert _quantize(tmp_path, {"op_types": ["Conv", "Gemm"]}) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f'error: {tmp_path / "r.json"}: recipe op_types ["Conv", "Gemm"] selects no node of the model, so nothing would be '
                   "quantized: the model has none of them; its op types are MatMul, Relu. Set \"op_types\" to op "
                   'types it has that preset cpu-u8s8 quantizes (e.g. ["MatMul"]) or remove it; write "op_types": [] '
                   "to write the model unquantized."]
    assert not (tmp_path / "q.onnx").exists()


def test_the_plan_refuses_it_too(tmp_path):
    model = load_model(_model(tmp_path))
    with pytest.raises(RecipeError, match=r'^recipe op_types \["Conv"\] selects no node'):
        build_plan(model, Recipe(op_types=["Conv"]))


@pytest.mark.parametrize(("recipe", "written"), [
    ({"op_types": []}, "wrote {out} (0 of 0 node units quantized"),  # asked for: nothing quantized
    ({"exclude": ["*"]}, "wrote {out} (0 of 1 node units quantized"),  # every node kept float by the user
    ({"op_types": ["Conv", "MatMul"]}, "wrote {out} (1 of 1 node units quantized"),  # one entry present: a warning
])
def test_recipes_that_select_on_purpose_are_written(tmp_path, capsys, recipe, written):
    assert _quantize(tmp_path, recipe) == 0
    assert written.format(out=tmp_path / "q.onnx") in capsys.readouterr().out
    assert onnx.load(tmp_path / "q.onnx").graph.node
