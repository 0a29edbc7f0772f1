"""A unit left in float for a reduction statistic names the tensor as its own input or output: the
Problems dock showed node p2o.Add.232 next to "left in float: 'p2o.ReduceMean.3' is a reduction
statistic", read as a message about the ReduceMean (ppocrv4_rec)."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.core import api
from workbench.core.issues import IssueCode


def test_statistic_issues_name_the_tensor_as_the_nodes_input_or_output(corpus: Path):
    path = sorted((corpus / "ppocrv4_rec").glob("model*.onnx"))[0]
    model = api.open_model(path)
    plan = api.plan(model, api.make_recipe("cpu-u8s8"), guard=True)
    issues = [i for i in plan.issues if i.code == IssueCode.REDUCTION_STATISTIC]
    assert len(issues) >= 5
    nodes = {n.name: n for n in model.proto.graph.node}
    for issue in issues:
        side, tensor = re.search(r"its (input|output) '([^']+)' is ", issue.message).groups()
        node = nodes[issue.node]
        assert tensor in (node.input if side == "input" else node.output), issue.message
    first = next(i for i in issues if i.node == "p2o.Add.232")
    assert first.message.startswith("left in float: its input 'p2o.ReduceMean.3' is a reduction statistic")
