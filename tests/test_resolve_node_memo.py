"""resolve_node's memo (one config per op type and matching rules / override objects) resolves every node as
without it, a plan serialises each shared spec once, and a plan built so equals one built without either."""

from __future__ import annotations

from dataclasses import fields

import pytest

from workbench.core import api
from workbench.core.planning import plan as plan_module
from workbench.core.planning.plan import GraphFacts, build_plan
from workbench.core.recipe import recipe as recipe_module
from workbench.core.recipe.recipe import resolve_node
from workbench.core.recipe.record import Record
from workbench.core.recipe.spec import NodeSettings, PartialSpec, QuantSpec, Rule
from workbench.core.tuning.recipe_choice import variant


def _recipes(model) -> dict[str, object]:
    """The recipe choice's variants and promotion groups, plus rules, overrides and exclude globs of each kind."""
    nodes = [n.name for n in model.proto.graph.node]
    present = {n.op_type for n in model.proto.graph.node}
    base = api.make_recipe("cpu-u8s8")
    mse = variant(base, "mse", present)
    return {
        "preset": variant(base, "preset", present),
        "mse": mse,
        "compute+mse": variant(base, "compute+mse", present),
        "mse, a group kept float": mse.with_excluded(nodes[:5]),
        "rules and overrides": base.model_copy(
            update={
                "rules": [
                    Rule(op_type="Conv", activation=PartialSpec(observer="percentile")),
                    Rule(op_type="MatMul", weight=PartialSpec(granularity="per_tensor")),
                    Rule(name="*", activation=PartialSpec(symmetric=True)),
                    Rule(name=nodes[1][:3] + "*", exclude=True),
                ],
                "overrides": {
                    nodes[0]: NodeSettings(activation=PartialSpec(dtype="uint16")),
                    nodes[2]: NodeSettings(exclude=True),
                },
                "exclude": [nodes[3]],
            }
        ),
    }


@pytest.mark.parametrize("name", ["nudenet_320n/model.onnx", "digits_transformer/model_opset17.onnx"])
def test_every_node_resolves_as_without_the_memo(name, corpus):
    model = api.open_model(corpus / name)
    for label, recipe in _recipes(model).items():
        memo: dict = {}
        nodes = list(model.proto.graph.node)
        for node in nodes + nodes:  # the second time round from the memo only
            assert resolve_node(recipe, node.name, node.op_type, memo) == resolve_node(
                recipe, node.name, node.op_type
            ), label
        assert len(memo) < len(nodes) / 4, label  # configs are shared, not one per node


@pytest.mark.parametrize("name", ["nudenet_320n/model.onnx", "digits_transformer/model_opset17.onnx"])
def test_a_plan_built_with_the_memo_equals_one_built_without(name, monkeypatch, corpus):
    model = api.open_model(corpus / name)
    facts = GraphFacts(model.proto)
    recipes = _recipes(model)
    with_memo = {label: build_plan(model, r, facts) for label, r in recipes.items()}
    monkeypatch.setattr(
        plan_module, "resolve_node", lambda r, n, op, memo=None: recipe_module.resolve_node(r, n, op)
    )
    monkeypatch.setattr(
        plan_module, "_dump", lambda spec, dumps: spec.model_dump_json()
    )  # every spec serialised
    for label, recipe in recipes.items():
        without = build_plan(model, recipe, facts)
        for f in fields(without):
            assert getattr(with_memo[label], f.name) == getattr(without, f.name), (label, f.name)


def test_a_plan_serialises_each_spec_it_compares_once(monkeypatch, corpus):
    model = api.open_model(corpus / "nudenet_320n/model.onnx")
    recipe = _recipes(model)["mse"]
    facts = GraphFacts(model.proto)
    build_plan(model, recipe, facts)
    dumped: list[int] = []
    real = Record.model_dump_json

    def dump(self, **kw):
        if isinstance(self, QuantSpec):
            dumped.append(id(self))
        return real(self, **kw)

    monkeypatch.setattr(Record, "model_dump_json", dump)
    the_plan = build_plan(model, recipe, facts)
    assert the_plan.activations and len(dumped) == len(set(dumped)) <= 8  # was 562 dumps of 8 specs
