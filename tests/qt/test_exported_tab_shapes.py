"""The Exported tab shows each node's output shape, as the Graph tab does, for a file that stores none (pytest-qt,
offscreen).

The tab read the file as written: onnxruntime's QOperator export of digits_cnn keeps no value_info for the tensors it
renames, so 7 of its 9 nodes (every QLinearConv, the pool, Flatten) were drawn without an output shape, and our own
QDQ export of minilm_l6_v2 366 of 472 nodes (``workbench-cli render`` of the same files, which opens them as the Graph
tab does, showed them all). The tab now runs the model preparation's shape inference on what it reads."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.qt.quant_tab import QuantModelTab


def _qoperator_chain(path) -> None:
    """x [N, 1, 8, 8] -> QuantizeLinear -> QLinearConv (4 filters 3 x 3, pads 1, stride 2) -> DequantizeLinear ->
    Relu -> Flatten, with no value_info: the shapes the file holds are its input's and output's alone."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(0.05, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "z"),
        numpy_helper.from_array(rng.integers(-20, 20, (4, 1, 3, 3)).astype(np.int8), "w"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wz"),
    ]
    h = helper.make_node
    nodes = [
        h("QuantizeLinear", ["x", "s", "z"], ["xq"], name="quant"),
        h(
            "QLinearConv",
            ["xq", "s", "z", "w", "ws", "wz", "s", "z"],
            ["cq"],
            name="conv",
            pads=[1, 1, 1, 1],
            strides=[2, 2],
        ),
        h("DequantizeLinear", ["cq", "s", "z"], ["c"], name="dequant"),
        h("Relu", ["c"], ["r"], name="relu"),
        h("Flatten", ["r"], ["y"], name="flatten"),
    ]
    graph = helper.make_graph(
        nodes,
        "qop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_exported_tab_draws_inferred_output_shapes(qtbot, tmp_path):
    path = tmp_path / "qop.onnx"
    _qoperator_chain(path)
    # the shapes onnxruntime computes, batch 3 (named N in the file)
    model = onnx.load(str(path))
    model.graph.output.extend(
        [
            helper.make_tensor_value_info("cq", TensorProto.UINT8, None),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, None),
        ]
    )
    run = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y, cq, r = run.run(["y", "cq", "r"], {"x": np.zeros((3, 1, 8, 8), np.float32)})
    assert cq.shape == r.shape == (3, 4, 4, 4) and y.shape == (3, 64)

    tab = QuantModelTab(path)
    qtbot.addWidget(tab)
    tab.resize(900, 700)
    with qtbot.waitSignal(tab.canvas.layoutReady, timeout=300_000):
        tab.show()
    try:
        st = tab.canvas._state.data.structure
        shapes = dict(zip(st.names, st.out_shapes, strict=True))
        # were "" (only the graph's input and output had a shape in the file)
        assert shapes["conv"] == shapes["relu"] == "N x 4 x 4 x 4"
        assert shapes["flatten"] == "N x 64"
    finally:
        tab.shutdown()
