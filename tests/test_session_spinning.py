"""Sessions without thread spinning (make_session(spinning=False)): the recipe choice's scores and bias
correction's means run on them, and they compute the same values as spinning sessions."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.runtime import session as session_module
from workbench.core.runtime.session import make_session
from workbench.core.transforms import bias_correction
from workbench.core.tuning import recipe_choice

SPIN = "session.intra_op.allow_spinning"


def _conv_model(rng) -> onnx.ModelProto:
    w = (rng.normal(size=(16, 8, 3, 3)) * 0.2).astype(np.float32)
    b = (rng.normal(size=16) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["h"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 16, 32, 32])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_spinning_off_is_set_and_computes_the_same_values():
    rng = np.random.default_rng(3)
    proto = _conv_model(rng)
    x = rng.normal(size=(4, 8, 32, 32)).astype(np.float32)
    quiet = make_session(proto, threads=2, spinning=False)
    busy = make_session(proto, threads=2)
    assert quiet.get_session_options().get_session_config_entry(SPIN) == "0"
    with pytest.raises(RuntimeError):  # onnxruntime's default (spinning on): the entry is not set
        busy.get_session_options().get_session_config_entry(SPIN)
    got = quiet.run(["y"], {"x": x})[0]
    assert np.array_equal(got, busy.run(["y"], {"x": x})[0])
    want = onnx.reference.ReferenceEvaluator(proto).run(["y"], {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_choice_and_its_means_run_without_spinning(tmp_path, monkeypatch):
    """Every session the recipe choice makes for its scores, the float reference and bias correction's
    input means has spinning off; the input means are the float model's mean Conv input (here the graph
    input itself), and the choice is the one made with spinning sessions."""
    rng = np.random.default_rng(5)
    proto = _conv_model(rng)
    x = (rng.exponential(1.0, (24, 8, 32, 32)) + 0.25).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    (tmp_path / "m.onnx").write_bytes(proto.SerializeToString())
    model, data = api.open_model(tmp_path / "m.onnx"), str(tmp_path / "calib.npz")
    spun = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), data)

    made = []

    def recording(p, **kwargs):
        made.append(kwargs.get("spinning", True))
        return session_module.make_session(p, **kwargs)

    monkeypatch.setattr(recipe_choice, "make_session", recording)
    monkeypatch.setattr(bias_correction, "make_session", recording)
    rep = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    assert rep.scores == spun.scores and rep.recipe == spun.recipe
    # the float reference + one score per variant, one input-means run, one Conv-shift session at least
    assert len(made) >= len(rep.scores) + 3 and not any(made)

    made.clear()
    means = bias_correction.input_means(proto, ["x"], [{"x": x[:16]}, {"x": x[16:]}])
    assert made == [False]
    np.testing.assert_allclose(means["x"][0], x.astype(np.float64).mean(axis=0), rtol=1e-12)
