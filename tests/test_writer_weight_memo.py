"""The QDQ writer's memo of quantized weights (QdqWriter ``weights``, kept on GraphFacts): a later write of the
same model with the same weight settings copies the integer weights and their qparams instead of computing
them again, and writes the same bytes as a write without the memo; another weight setting misses it."""

from __future__ import annotations

import numpy as np

from tests.test_bias_means_cache import DEPTH, _setup
from workbench.core import api
from workbench.core.pipeline.quantize import quantize
from workbench.core.planning.plan import GraphFacts
from workbench.core.recipe.spec import PartialSpec, Rule
from workbench.core.writers import common, qdq


def _counting(monkeypatch) -> dict[str, int]:
    """Calls of the writer's weight quantization and MinMax weight qparams from here on."""
    calls = {"quantize": 0, "qparams": 0}
    real_q, real_qp = qdq.quantize, common.weight_qparams

    def quantized(*a, **k):
        calls["quantize"] += 1
        return real_q(*a, **k)

    def qparams(*a, **k):
        calls["qparams"] += 1
        return real_qp(*a, **k)
    monkeypatch.setattr(qdq, "quantize", quantized)
    monkeypatch.setattr(common, "weight_qparams", qparams)
    return calls


def _bytes(res) -> bytes:
    return res.proto.SerializeToString(deterministic=True)


def test_a_memo_hit_writes_the_bytes_of_a_fresh_write(tmp_path, monkeypatch):
    model, data, _ = _setup(tmp_path)
    recipe = api.make_recipe("cpu-u8s8")
    fresh = _bytes(quantize(model, recipe, data=data, check=False))  # its own GraphFacts: an empty memo
    calls = _counting(monkeypatch)
    facts = GraphFacts(model.proto)
    first = quantize(model, recipe, data=data, check=False, facts=facts)
    assert calls == {"quantize": DEPTH, "qparams": DEPTH}  # one per Conv weight
    assert len(facts.quantized_weights) == 2 * DEPTH
    again = quantize(model, recipe, data=data, check=False, facts=facts)
    assert calls == {"quantize": DEPTH, "qparams": DEPTH}  # nothing computed again
    assert _bytes(first) == _bytes(again) == fresh
    # the written weights are still each write's own initializers (names, values) as onnxruntime reads them
    sess_a, sess_b = (api.make_session(r.proto) for r in (first, again))
    x = np.load(data)["x"][:2]
    for a, b in zip(sess_a.run(None, {"x": x}), sess_b.run(None, {"x": x}), strict=True):
        assert a.tobytes() == b.tobytes()


def test_another_weight_setting_misses_the_memo(tmp_path, monkeypatch):
    model, data, _ = _setup(tmp_path)
    per_channel = api.make_recipe("cpu-u8s8")
    per_tensor = per_channel.model_copy(update={"rules": [Rule(name="*", weight=PartialSpec(granularity="per_tensor"))]})
    fresh = _bytes(quantize(model, per_tensor, data=data, check=False))
    facts = GraphFacts(model.proto)
    channel_bytes = _bytes(quantize(model, per_channel, data=data, check=False, facts=facts))
    calls = _counting(monkeypatch)
    tensor_bytes = _bytes(quantize(model, per_tensor, data=data, check=False, facts=facts))
    assert calls == {"quantize": DEPTH, "qparams": DEPTH}  # every weight computed for the new setting
    assert tensor_bytes == fresh != channel_bytes
    assert len(facts.quantized_weights) == 4 * DEPTH  # both settings kept
    assert _bytes(quantize(model, per_channel, data=data, check=False, facts=facts)) == channel_bytes
    assert calls == {"quantize": DEPTH, "qparams": DEPTH}
