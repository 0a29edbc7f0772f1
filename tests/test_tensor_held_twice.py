"""A weight over 4 KiB holding its values twice (raw_data beside float_data, or raw_data in a tensor marked
external) was opened: the reader runs onnx.checker on a skeleton in which such weights are typed graph inputs,
so the checker's 'one and only one value field' never saw them, and numpy_helper then took raw_data while
another reader may take float_data. tensor_check refuses it in one line naming the tensor, as the checker does
for small ones; a model without the second field opens with the values onnxruntime computes with."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import ModelError

W = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096  # 16 KiB: left out of the reader's checker


def _model(path, mutate=None):
    w = numpy_helper.from_array(W, "W")
    if mutate is not None:
        mutate(w)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path.write_bytes(model.SerializeToString())  # onnx.save would move an external tensor's raw_data out
    return path


def _external_with_raw(w):
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "m.onnx.data"), ("offset", "0"), ("length", str(W.nbytes))):
        w.external_data.add(key=k, value=v)


@pytest.mark.parametrize(("mutate", "fields"), [
    (lambda w: w.float_data.extend([1.0]), "raw_data and float_data"),
    (_external_with_raw, "raw_data and external data"),
], ids=["float_data beside raw_data", "raw_data in an external tensor"])
def test_a_weight_holding_its_values_twice_is_refused(tmp_path, capsys, mutate, fields):
    path = _model(tmp_path / "m.onnx", mutate)
    (tmp_path / "m.onnx.data").write_bytes(W.tobytes())
    line = (f"{path}: tensor 'W' holds its values twice ({fields}); a tensor holds them in one place only, so which "
            "counts cannot be told.")
    with pytest.raises(ModelError) as err:
        api.open_model(path)
    assert err.value.message == line
    for argv in (["quantize", str(path), "-o", str(tmp_path / "q.onnx")], ["inspect", str(path)]):
        assert main(argv) == 2  # inspect's quick path took raw_data and reported the model (exit 0)
        assert capsys.readouterr().err.splitlines() == [f"error: {line} The file is corrupted or was edited by "
                                                        "hand; re-export the model."]
    assert not (tmp_path / "q.onnx").exists()


def test_the_same_weight_held_once_opens_with_its_values(tmp_path):
    path = _model(tmp_path / "m.onnx")
    np.testing.assert_array_equal(api.open_model(path).initializer("W"), W)
    x = np.ones((1, 64), np.float32)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, x @ W, rtol=1e-6)
