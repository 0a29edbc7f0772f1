"""graph.walk reads attributes only of the nodes that may hold a subgraph: every operator of the ONNX domains
whose schema has a graph attribute, and every node of another domain (contrib ops such as BeamSearch)."""

from __future__ import annotations

from onnx import TensorProto, defs, helper

from workbench.core.graph.walk import GRAPH_OPS, ONNX_DOMAINS, iter_graphs, subgraphs


def _body(name: str):
    return helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], name,
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])


def test_the_graph_operators_are_those_of_the_installed_onnx_schemas():
    kinds = (defs.OpSchema.AttrType.GRAPH, defs.OpSchema.AttrType.GRAPHS)
    schemas = defs.get_all_schemas_with_history()
    with_graphs = {s.name for s in schemas if any(a.type in kinds for a in s.attributes.values())}
    assert with_graphs <= GRAPH_OPS, f"add to graph.walk.GRAPH_OPS: {sorted(with_graphs - GRAPH_OPS)}"
    assert {s.domain for s in schemas} <= ONNX_DOMAINS


def test_subgraphs_of_standard_and_custom_domain_nodes():
    if_node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=_body("t"), else_branch=_body("e"))
    beam = helper.make_node("BeamSearch", ["x"], ["y"], name="beam", domain="com.microsoft", decoder=_body("d"),
                            encoder=_body("enc"))
    scan_ai = helper.make_node("Scan", ["x"], ["y"], name="scan", domain="ai.onnx", body=_body("s"), num_scan_inputs=1)
    assert [n for n, _ in subgraphs(if_node)] == ["else_branch", "then_branch"]  # make_node sorts attributes
    assert [n for n, _ in subgraphs(beam)] == ["decoder", "encoder"]
    assert [n for n, _ in subgraphs(scan_ai)] == ["body"]
    # a graph attribute Relu's schema does not declare (onnx.checker and opening a model refuse it): not read
    assert list(subgraphs(helper.make_node("Relu", ["x"], ["y"], name="relu", body=_body("r")))) == []
    g = helper.make_graph([if_node, beam], "g", [], [])
    assert [p for p, _ in iter_graphs(g)] == ["", "if/else_branch", "if/then_branch", "beam/decoder", "beam/encoder"]
