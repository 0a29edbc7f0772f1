""""N of M node units quantized": M does not depend on the recipe's exclusions.

Case 20 (an If whose branch MatMuls write M, then a standalone Relu) read "3 of 3 node units quantized" as planned
and "0 of 2 ... all 2 were kept float" with ``--exclude '*'``: the Relu is a unit of the plan only while M is
quantized (:meth:`~workbench.core.planning.plan.QuantPlan.carried`), while excluded MatMuls stay units. A carried
Relu / Clip now rides with the units that quantize its input, as the preset folds Relu / Clip into their
producer (:meth:`~workbench.core.planning.plan.QuantPlan.counted_units`): 2 of 2, 1 of 2, 0 of 2. Its Q/DQ is
still written.
"""

from __future__ import annotations

from dataclasses import replace

import onnx
import pytest
from test_latency_fallback_subgraph import _if_model

from workbench.cli import main
from workbench.core import api

QDQ = ("QuantizeLinear", "DequantizeLinear")


@pytest.mark.parametrize(("excluded", "counts"), [([], (2, 2)), (["then_mm"], (1, 2)), (["relu"], (2, 2)),
                                                  (["then_mm", "else_mm"], (0, 2))])
def test_the_count_of_units_does_not_change_with_exclusions(tmp_path, excluded, counts):
    path, _ = _if_model(tmp_path)
    plan = api.plan(api.open_model(path), api.make_recipe("cpu-u8s8").with_excluded(excluded), guard=True)
    assert plan.quantized_count() == counts
    assert sorted(plan.counted_units()) == ["else_mm", "then_mm"]


def test_quantizes_any_counts_a_carried_relu_the_unit_count_leaves_out(tmp_path):
    model = api.open_model(_if_model(tmp_path)[0])
    plan = api.plan(model, api.make_recipe("cpu-u8s8"), guard=True)
    assert plan.carried("relu") and plan.quantizes_any()
    # only the carried Relu left quantized (its Q/DQ is written): "0 of 2" counted, yet the plan quantizes a unit
    relu_only = replace(plan, units={n: replace(u, excluded=n != "relu") for n, u in plan.units.items()})
    assert relu_only.quantized_count() == (0, 2) and relu_only.quantizes_any()
    every_float = api.plan(model, api.make_recipe("cpu-u8s8").with_excluded(["then_mm", "else_mm"]), guard=True)
    assert sorted(every_float.units) == ["else_mm", "then_mm"] and not every_float.quantizes_any()
    assert not replace(plan, units={}).quantizes_any()


def test_cli_counts_the_same_units_with_and_without_exclude(tmp_path, capsys):
    path, data = _if_model(tmp_path)
    out = tmp_path / "q.onnx"
    assert main(["quantize", path, "--data", data, "--no-latency-check", "--no-auto", "-o", str(out)]) == 0
    assert f"wrote {out} (2 of 2 node units quantized" in capsys.readouterr().out  # "3 of 3" before
    relu = next(n for n in onnx.load(str(out)).graph.node if n.op_type == "Relu")
    assert relu.output[0] != "Y"  # the carried Relu is still quantized: its output goes through Q/DQ to Y
    assert main(["quantize", path, "--data", data, "--exclude", "*", "--no-latency-check", "--no-auto",
                 "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out} (0 of 2 node units quantized" in captured.out
    assert "warning: no node unit is quantized: all 2 were kept float" in captured.err
    assert not any(n.op_type in QDQ for n in onnx.load(str(out)).graph.node)


def test_case_20_counts_two_units_either_way(cases, tmp_path, capsys):
    case = cases / "20_if_subgraph_matmul"
    out = tmp_path / "q.onnx"
    args = ["quantize", str(case.with_suffix(".onnx")), "--data", str(case.with_suffix(".npz")), "--no-latency-check",
            "--no-auto", "-o", str(out)]
    assert main(args) == 0
    assert f"wrote {out} (2 of 2 node units quantized" in capsys.readouterr().out
    assert main(args + ["--exclude", "*"]) == 0
    assert f"wrote {out} (0 of 2 node units quantized" in capsys.readouterr().out
