"""A recipe file asking for per_block ranges from an observer that computes none (percentile, entropy, mse) is
refused when read, naming the file, the rule and the field. It was read, and calibration warned 'observer entropy
failed (... does not support per_block ranges.); MinMax used instead' on each such weight and wrote the model."""

from __future__ import annotations

import json

import pytest

from workbench.core import api
from workbench.core.errors import RecipeError

_HINT_END = " (see README, 'Recipes')."


@pytest.mark.parametrize(("rules", "message", "hint"), [
    ([{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32, "observer": "entropy"}}],
     "rules.0.weight.observer (rule op_type=Gemm): the entropy observer computes no per_block ranges (calibration "
     "would use minmax instead).", 'Use "observer": "minmax" for per_block settings, or remove it'),
    ([{"op_type": "Gemm", "weight": {"observer": "mse"}},
      {"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}}],
     "rules.1.weight.granularity (rule op_type=Gemm): the mse observer (from rules.0, rule op_type=Gemm) computes "
     "no per_block ranges (calibration would use minmax instead).", 'Add "observer": "minmax" next to it'),
])
def test_per_block_with_a_histogram_observer_is_refused_at_load(tmp_path, rules, message, hint):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"rules": rules}))
    with pytest.raises(RecipeError) as info:
        api.load_recipe(path)
    assert info.value.message == f"{path}: invalid recipe at {message}"
    assert info.value.hint == hint + _HINT_END


@pytest.mark.parametrize("doc", [
    {"rules": [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32, "observer": "minmax"}}]},
    {"preset": "w4-block"},
    {"rules": [{"op_type": "Conv", "activation": {"observer": "entropy"}}]},
])
def test_per_block_with_minmax_and_histograms_per_tensor_are_read(tmp_path, doc):
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert api.load_recipe(tmp_path / "r.json") is not None
