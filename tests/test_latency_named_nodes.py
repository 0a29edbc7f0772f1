"""A node the user named -- an override of its own, or a rule by its name -- is never kept float by the
latency check: the placement neither probes it nor replaces the user's setting with ``exclude``, as the
fallback already left its island quantized (the app's nothing-quantized text says so). A rule naming the
depthwise Conv was replaced by ``{"exclude": true}`` when its probe measured slower."""

from __future__ import annotations

import json

import pytest
from test_latency_placement import _model, _seed_probe

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.pipeline import latency_placement


@pytest.fixture(autouse=True)
def _no_int8_share(monkeypatch):
    """The placement's int8 share off: of this model's 3 Conv units it would keep none float, so an unnamed dw
    would stay quantized for that reason, not for the one tested here."""
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)


@pytest.mark.parametrize("named", [
    {"rules": [{"name": "dw", "activation": {"observer": "minmax"}}]},
    {"overrides": {"dw": {"activation": {"observer": "minmax"}}}},
])
def test_a_named_depthwise_conv_stays_quantized_though_its_probe_measured_slower(tmp_path, named):
    model, data = _model(tmp_path)
    _seed_probe(1.4)  # QLinearConv measured 1.4x the float Conv: an unnamed dw is kept float
    plain = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert plain.plan.units["dw"].excluded and plain.recipe.overrides["dw"].exclude

    recipe = api.Recipe.from_json(json.dumps({"preset": "cpu-u8s8", **named}))
    res = api.quantize(model, recipe, data=data, latency_check=True)
    assert not res.plan.units["dw"].excluded
    assert not [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node == "dw"]
    assert res.recipe.overrides == recipe.overrides and res.recipe.rules == recipe.rules  # the user's, untouched
    (dw,) = [n for n in res.proto.graph.node if n.name == "dw"]
    assert list(dw.input) == ["a_dequantized", "Wd_dequantized", "Bd_dequantized"]  # dw reads Q/DQ: quantized
