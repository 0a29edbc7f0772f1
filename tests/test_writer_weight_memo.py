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


def test_the_memo_key_tells_every_field_of_the_spec_apart():
    """The weight memo is keyed on the spec's fields (qdq._spec_key), not its JSON text: a spec built another
    way with the same values shares the key, and a change to any one field (observer_args too) gives another."""
    from workbench.core.recipe.spec import Granularity, QuantSpec

    base = QuantSpec(dtype="int8", granularity=Granularity.per_channel, observer_args={"percentile": 99.9, "bins": 512.0})
    same = QuantSpec(observer_args={"bins": 512.0, "percentile": 99.9}, granularity="per_channel", dtype="int8")
    assert qdq._spec_key(base) == qdq._spec_key(same) and hash(qdq._spec_key(base)) == hash(qdq._spec_key(same))
    changes = {"dtype": "uint8", "symmetric": False, "granularity": Granularity.per_tensor, "axis": 1,
               "observer": "mse", "observer_args": {"percentile": 99.99, "bins": 512.0}, "reduce_range": True,
               "power_of_two": True}
    assert set(changes) == set(QuantSpec.model_fields) - {"block_size"}
    keys = {qdq._spec_key(base.model_copy(update={k: v})) for k, v in changes.items()}
    keys.add(qdq._spec_key(QuantSpec(dtype="int4", granularity="per_block", block_size=32)))
    assert len(keys) == len(changes) + 1 and qdq._spec_key(base) not in keys
