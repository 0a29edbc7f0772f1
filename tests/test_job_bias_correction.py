"""The app's calibrate job with cached ranges (Analyze, F6) writes a recipe's bias correction as quantize does:
it wrote the model without it (no data handed on), so its figures were not of the exported model."""

from __future__ import annotations

from test_bias_means_cache import _setup

from workbench.core import api, jobs
from workbench.core.progress import CancelToken


def test_the_cached_path_writes_the_recipes_bias_correction(tmp_path):
    model, data, _ = _setup(tmp_path)
    recipe = api.make_recipe("cpu-u8s8").model_copy(update={"bias_correction": True})
    payload = {"data": {"kind": "npz", "path": data}, "samples": None, "reuse": True, "calibration": None}
    result, _cache = jobs._quantize_with_cache(model, recipe, payload, lambda *a: None, CancelToken())
    want = api.quantize(model, recipe, data=data)
    plain = api.quantize(model, recipe.model_copy(update={"bias_correction": False}), data=data)
    assert result.proto.SerializeToString() == want.proto.SerializeToString()
    assert want.proto.SerializeToString() != plain.proto.SerializeToString()  # the correction moved the biases
