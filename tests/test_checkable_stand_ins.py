"""external.checkable gives onnx.checker each weight left on disk as the saver's one-element stand-in
(model_pieces.stand_in), not as a typed graph input: the checker then refuses in a model with lazy weights what
it refuses in the whole model (a name given twice, a second value field, a negative dimension), which the typed
input let pass."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.io import external
from workbench.core.io.model_pieces import stand_in


@pytest.fixture(autouse=True)
def _own_trusted_files(monkeypatch):
    """keep_lazy records the data file in the module's table and the environment: this test's own, dropped after."""
    monkeypatch.setattr(external, "_TRUSTED", {})
    monkeypatch.setattr(external, "_MAPS", {})
    monkeypatch.setenv(external._ENV, "{}")


def _model(tmp_path, extra=None, mutate=None) -> onnx.ModelProto:
    data = tmp_path / "m.onnx.data"
    data.write_bytes(np.arange(16, dtype=np.float32).tobytes())
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[4, 4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "m.onnx.data"), ("offset", "0"), ("length", "64")):
        w.external_data.add(key=k, value=v)
    external.keep_lazy(w, str(data))  # as the reader keeps a large weight on disk
    if mutate is not None:
        mutate(w)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w, *([extra] if extra else [])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_valid_model_passes_and_its_lazy_weight_is_the_savers_stand_in(tmp_path):
    m = _model(tmp_path)
    checked = external.checkable(m)
    onnx.checker.check_model(checked)
    w = checked.graph.initializer[0]
    assert w == stand_in(m.graph.initializer[0], on_disk=True)
    assert (list(w.dims), w.raw_data, w.data_location, len(w.external_data)) == ([1, 1], bytes(4), 0, 0)
    assert [i.name for i in checked.graph.input] == ["x"]
    assert external.lazy_file(m.graph.initializer[0])  # the model itself is not changed


@pytest.mark.parametrize(("extra", "mutate", "reason"), [
    (numpy_helper.from_array(np.ones(2, np.float32), "W"), None, "W initializer name is not unique"),
    (None, lambda w: w.float_data.extend([1.0]),
     "TensorProto (tensor name: W) should contain one and only one value field."),
    (None, lambda w: w.dims.__setitem__(0, -1), "Negative dimension value (tensor name: W)"),
], ids=["name twice", "float_data beside", "negative dim"])
def test_what_the_checker_refuses_in_the_whole_model_is_refused(tmp_path, extra, mutate, reason):
    with pytest.raises(onnx.checker.ValidationError) as err:
        onnx.checker.check_model(external.checkable(_model(tmp_path, extra, mutate)))
    assert str(err.value).startswith(reason)
