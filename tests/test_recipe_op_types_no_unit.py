"""A recipe whose ``op_types`` selects only data-movement ops of the model (Flatten, MaxPool: never a unit of their
own) is refused in one line naming the entries, what they are and the op types the model's units have (digits_cnn
with ``["Flatten"]`` wrote a model with '0 of 0 node units quantized' and exited 0; 5f7ab87 refused only op types the
model lacks). An op type that forms units when selected (Relu) is written as before."""

from __future__ import annotations

import json

import onnx
import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core.errors import RecipeError
from workbench.core.model.load import load_model
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.recipe import Recipe

UNITS = "the model's unit op types (preset cpu-u8s8) are AveragePool, Conv, Gemm"
HINT = ('Set "op_types" to some of them (e.g. ["AveragePool", "Conv", "Gemm"]) or remove it; write "op_types": [] to '
        "write the model unquantized.")


def _quantize(tmp_path, op_types: list[str]) -> int:
    (tmp_path / "r.json").write_text(json.dumps({"preset": "cpu-u8s8", "op_types": op_types}))
    return main(["quantize", str(EXAMPLE / "digits_cnn.onnx"), "--data", str(EXAMPLE / "digits_cnn_calib.npz"),
                 "--recipe", str(tmp_path / "r.json"), "-o", str(tmp_path / "q.onnx"), "--no-latency-check",
                 "--no-auto"])


@pytest.mark.parametrize(("op_types", "what"), [
    (["Flatten"], "Flatten only moves data (never a unit of its own: the tensors take the grid of the units around "
                  f"them); {UNITS}."),
    (["MaxPool", "Flatten"], "MaxPool, Flatten only move data (never a unit of their own: the tensors take the grid "
                             f"of the units around them); {UNITS}."),
    (["Flatten", "MatMul"], "Flatten only moves data (never a unit of its own: the tensors take the grid of the units "
                            f"around them); the model has no MatMul; {UNITS}."),
])
def test_data_movement_op_types_are_an_error_naming_the_unit_op_types(tmp_path, capsys, op_types, what):
    assert _quantize(tmp_path, op_types) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: recipe op_types {json.dumps(op_types)} selects no quantizable unit of the model, so "
                   f"nothing would be quantized: {what} {HINT}"]
    assert not (tmp_path / "q.onnx").exists()


def test_the_plan_refuses_it_too():
    with pytest.raises(RecipeError, match=r'^recipe op_types \["Flatten"\] selects no quantizable unit') as info:
        build_plan(load_model(EXAMPLE / "digits_cnn.onnx"), Recipe(op_types=["Flatten"]))
    assert info.value.hint == HINT


def test_op_types_that_form_units_are_written(tmp_path, capsys):
    """Relu is no unit under the preset's op types, but selected it is one (3 on digits_cnn)."""
    assert _quantize(tmp_path, ["Relu"]) == 0
    assert f"wrote {tmp_path / 'q.onnx'} (3 of 3 node units quantized" in capsys.readouterr().out
    assert onnx.load(tmp_path / "q.onnx").graph.node
