"""The inspector's Node section says what one selected node is (as Netron would): attributes, inputs and
outputs with dtype and shape, weights with their size; symbolic dims by name, unknown ones as "?"."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _conv_model(x_shape, *, table: int = 0) -> onnx.ModelProto:
    """x -> Conv(group 2, strides 2, pads 1; weight [8, 2, 3, 3] and bias [8] initializers) -> Relu -> y;
    ``table`` > 0: y also goes through a Gather whose indices are a ``table``-long constant."""
    w = numpy_helper.from_array(np.arange(8 * 2 * 9, dtype=np.float32).reshape(8, 2, 3, 3) / 100, "conv.w")
    b = numpy_helper.from_array(np.zeros(8, np.float32), "conv.b")
    nodes = [helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c"], name="conv", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1], group=2, dilations=[1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    y_shape = [x_shape[0], 8, *((d + 1) // 2 if isinstance(d, int) else None for d in x_shape[2:])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)]
    if table:
        nodes.append(helper.make_node("Transpose", ["y"], ["t"], name="transpose", perm=[0, 2, 3, 1]))
        nodes.append(helper.make_node("Constant", [], ["k"], name="table",
                                      value_ints=list(range(table))))
        outputs.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, [y_shape[i] for i in (0, 2, 3, 1)]))
        outputs.append(helper.make_tensor_value_info("k", TensorProto.INT64, [table]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              outputs, [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _open(win, open_file, tmp_path, proto) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(proto, str(path))
    open_file(win, path, timeout=60_000)


def test_node_section_shows_conv_attributes_tensors_and_weights(qtbot, window, open_file, tmp_path):
    win = window
    _open(win, open_file, tmp_path, _conv_model([1, 4, 16, 16]))
    box = win.inspector.node_box
    assert box.isHidden()  # nothing selected
    win.focus_node("conv")
    assert win.inspector.nodes == ["conv"]
    assert not box.isHidden() and not box.body.isHidden()
    assert box.shown("node") == [("op", "Conv"), ("name", "conv")]
    assert box.shown("attributes") == [("dilations", "[1, 1]"), ("group", "2"), ("kernel_shape", "[3, 3]"),
                                       ("pads", "[1, 1, 1, 1]"), ("strides", "[2, 2]")]
    assert box.shown("inputs") == [("X", "x float32 [1, 4, 16, 16]"),
                                   ("W", "conv.w weight float32 [8, 2, 3, 3], 144 values (576 B)"),
                                   ("B", "conv.b weight float32 [8], 8 values (32 B)")]
    assert box.shown("outputs") == [("Y", "c float32 [1, 8, 8, 8]")]
    assert box.toggle.text() == "Node: Conv"
    # below the recipe controls of a float model, which show the resolved spec first (test_inspector_roles_in_view)
    lay = box.parentWidget().layout()
    assert lay.indexOf(box) > lay.indexOf(win.inspector.roles["bias"])
    assert not win.inspector.roles["weight"].isHidden()

    # the output's name selects the node reading it; the Relu's input selects the Conv back
    out_label = next(v for s, _k, v in box.rows if s == "outputs")
    assert "Click to select relu." in out_label.toolTip() and "written by conv" in out_label.toolTip()
    out_label.linkActivated.emit("0")
    assert win.inspector.nodes == ["relu"] and win.canvas.selected_nodes() == ["relu"]
    assert box.shown("attributes") == [] and box.shown("inputs") == [("X", "c float32 [1, 8, 8, 8]")]
    next(v for s, _k, v in box.rows if s == "inputs").linkActivated.emit("0")
    assert win.inspector.nodes == ["conv"]

    # folded away, it stays folded for the next node; several nodes: no Node section (as before)
    box.toggle.click()
    assert box.body.isHidden()
    win.focus_node("relu")
    assert not box.isHidden() and box.body.isHidden()
    box.toggle.click()
    win.canvas.select_nodes(["conv", "relu"])
    assert box.isHidden() and not win.inspector.roles["activation"].isHidden()
    win.inspector.set_nodes([])
    assert box.isHidden()


def test_node_section_symbolic_dims_long_lists_and_dtype_attributes(qtbot, window, open_file, tmp_path):
    win = window
    _open(win, open_file, tmp_path, _conv_model(["batch", 4, "height", None], table=30))
    box = win.inspector.node_box
    win.focus_node("conv")
    assert box.shown("inputs")[0] == ("X", "x float32 [batch, 4, height, ?]")
    # shape inference's own unknowns (unk__0) read as "?", the named batch dim carries through
    assert box.shown("outputs") == [("Y", "c float32 [batch, 8, ?, ?]")]
    win.focus_node("transpose")
    assert box.shown("attributes") == [("perm", "[0, 2, 3, 1]")]
    assert box.shown("outputs") == [("transposed", "t float32 [batch, ?, ?, 8]")]
    # a kept Constant (a graph output): its 30 values elided, the whole list in the tooltip
    win.focus_node("table")
    (key, text), = box.shown("attributes")
    assert key == "value_ints" and text == "[0, 1, 2, 3, 4, 5, 6, 7, …] (30 values)"
    label = next(v for s, _k, v in box.rows if s == "attributes")
    assert label.toolTip() == "value_ints = [" + ", ".join(str(i) for i in range(30)) + "]"
    assert box.shown("inputs") == [] and box.shown("outputs") == [("output", "k int64 [30]")]


def test_node_section_below_the_parameters_of_a_quantized_model(qtbot, window, open_file, ort_qdq_file):
    win = window
    open_file(win, ort_qdq_file)
    proto = onnx.load(str(ort_qdq_file))
    producer = {o: n for n in proto.graph.node for o in n.output}
    conv = [n for n in proto.graph.node if n.op_type == "Conv"][1]
    win.focus_node(conv.name)
    box, params = win.inspector.node_box, win.inspector.quant_params
    assert not params.isHidden() and not box.isHidden()
    lay = box.parentWidget().layout()
    assert lay.indexOf(params) < lay.indexOf(box)  # the quantization parameters first, as before
    dq_w = producer[conv.input[1]]
    w = next(t for t in proto.graph.initializer if t.name == dq_w.input[0])
    shape = ", ".join(str(d) for d in w.dims)
    assert dict(box.shown("inputs"))["W"] == f"{conv.input[1]} float32 [{shape}]"
    # the activation's link skips the DequantizeLinear / QuantizeLinear pair (folded into badges on the canvas)
    dq_x = producer[conv.input[0]]
    source = producer[producer[dq_x.input[0]].input[0]]
    assert (dq_x.op_type, producer[dq_x.input[0]].op_type) == ("DequantizeLinear", "QuantizeLinear")
    x_label = next(v for s, k, v in box.rows if s == "inputs" and k == "X")
    assert f"written by {dq_x.name}" in x_label.toolTip() and f"Click to select {source.name}." in x_label.toolTip()
    x_label.linkActivated.emit("0")
    assert win.inspector.nodes == [source.name]
    # the int8 weight behind the DequantizeLinear, with its size
    win.inspector.set_nodes([dq_w.name])
    n = int(np.prod(w.dims))
    assert dict(box.shown("node"))["op"] == "DequantizeLinear"
    assert box.shown("inputs")[0] == ("x", f"{w.name} weight int8 [{shape}], {n} values ({n / 1024:.1f} KiB)")
    scale = next(t for t in proto.graph.initializer if t.name == dq_w.input[1])
    assert list(scale.dims) == []  # per tensor: a scalar
    assert box.shown("inputs")[1] == ("x_scale", f"{scale.name} weight float32 [], 1 value (4 B)")
