"""Bias correction writes the plan again from the float model with corrected biases
(pipeline.write_passes.corrected_model): the copy is not prepared again, and the written model is the
same bytes as from a copy that :func:`prepare_proto` prepares again, as it was written before."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from workbench.core import api
from workbench.core.model.load import load_model, prepare_proto
from workbench.core.pipeline.write_passes import corrected_model
from workbench.core.transforms.bias_correction import correctable_units, corrected_proto
from workbench.core.writers.registry import write_model


def _shifts(model, plan) -> dict[str, np.ndarray]:
    """A shift per output channel of every correctable Conv bias: 0.01 * (channel index + 1)."""
    return {u.bias: 0.01 * np.arange(1, model.initializer(u.bias).size + 1) for u in correctable_units(plan)}


@pytest.mark.parametrize(("name", "file"), [("digits_cnn", "model_opset17.onnx"), ("ppocrv4_rec", "model.onnx")])
def test_the_corrected_model_writes_the_bytes_of_a_prepared_copy(corpus, name, file):
    folder = corpus / name
    model = load_model(folder / file)
    res = api.quantize(model, api.Recipe(preset="cpu-u8s8"), data=folder / "calib.npz", samples=8)
    shifts = _shifts(model, res.plan)
    assert len(shifts) == {"digits_cnn": 3, "ppocrv4_rec": 38}[name]
    fixed = corrected_model(model, shifts)
    again = prepare_proto(corrected_proto(model.proto, shifts), path=model.path, sha256=model.sha256)
    ours = write_model(fixed, res.plan, res.qparams).proto.SerializeToString()
    assert ours == write_model(again, res.plan, res.qparams).proto.SerializeToString()
    for field in ("path", "sha256", "renames", "notes", "quantized_nodes", "ambiguous_names", "original_opset",
                  "external_data_files", "lifted_constants", "declared_value_info"):
        assert getattr(fixed, field) == getattr(again, field), field
    assert fixed.proto.SerializeToString() == again.proto.SerializeToString()
    bias = next(iter(shifts))
    want = (model.initializer(bias).astype(np.float64) - shifts[bias]).astype(np.float32)
    got = numpy_helper.to_array(next(i for i in fixed.proto.graph.initializer if i.name == bias))
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(model.initializer(bias), want)  # the input model keeps its biases
