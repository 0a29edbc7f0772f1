"""The sweep's running SQNR and fragment stop: the cheaper forms give exactly what the full ones gave.

``Sqnr`` sums with ``sqnr_sums`` (no dot product, q^2 or max) and must keep ``error_sums``'s ``sig``, ``err``
and ``n`` bit for bit, non-finite pairs left out in any chunk; ``FragmentStop`` answers ``in`` as the set
``(available - internal) | q_sources`` it replaces, so a unit's fragment is the one that set gave.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis.sweep_graph import FragmentStop, backward_closure, only_quantized, pair_index
from workbench.core.analysis.sweep_tasks import Sqnr
from workbench.core.analysis.sweep_types import tensor_types
from workbench.core.formats.error_sums import CHUNK, error_sums


def test_sqnr_keeps_the_error_sums_of_every_batch_bit_for_bit():
    rng = np.random.default_rng(3)
    acc, sig, err, n = Sqnr(), 0.0, 0.0, 0
    for size in (7, CHUNK, 3 * CHUNK + 11):
        ref = (rng.standard_normal(size) * 4).astype(np.float32)
        q = (ref + rng.standard_normal(size).astype(np.float32) * np.float32(0.03)).astype(np.float32)
        if size > CHUNK:
            ref[5], q[CHUNK + 2], ref[2 * CHUNK], q[2 * CHUNK] = np.nan, np.inf, -np.inf, np.nan
        acc.update(ref, q)
        full = error_sums(ref, q)
        sig, err, n = sig + full[0], err + full[1], n + full[5]
    assert (acc.sig, acc.err, acc.n) == (sig, err, n)
    assert n == 7 + CHUNK + 3 * CHUNK + 11 - 3  # the three chunks' non-finite pairs left out
    assert acc.figures() == (10.0 * np.log10(sig / err),)


def test_fragment_stop_answers_as_the_set_it_replaces():
    available = {"a": 1, "b": 1, "c": 1}
    stop = FragmentStop(available, {"b"}, {"w", "x"})
    as_set = ({x for x in available if x not in {"b"}}) | {"w", "x"}
    for name in ("a", "b", "c", "w", "x", "z", ""):
        assert (name in stop) == (name in as_set)


def _conv_chain(path) -> None:
    """x -> Conv -> Relu -> Conv -> Add(residual) -> y, float weights."""
    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.normal(0, 0.3, (4, 4, 3, 3)).astype(np.float32), f"w{i}") for i in range(2)]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "r0"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 6, 6])], initializer=w)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_a_units_fragment_is_the_one_the_stop_set_gave(tmp_path):
    _conv_chain(tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(1).normal(0, 1, (8, 4, 6, 6)).astype(np.float32))
    model = api.open_model(tmp_path / "m.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"))
    fp, qp = model.proto, result.proto
    f_types = tensor_types(fp, True)
    index = pair_index(fp, qp)
    units = [u for u in result.plan.units.values() if not u.excluded]
    assert {u.node for u in units} >= {"conv0", "conv1"}
    for unit in units:
        names = set(unit.nodes) | {unit.node}
        internal = {o for n in fp.graph.node if n.name in names for o in n.output}
        assert index.unit_outputs(names) == internal
        targets = [result.tensor_map.get(t, t) for t in unit.results]
        as_set = {x for x in f_types if x not in internal} | index.q_sources
        want = backward_closure(index.q_nodes, targets, as_set)
        got = backward_closure(index.q_nodes, targets, FragmentStop(f_types, internal, index.q_sources),
                               index.q_position)
        assert [n.name for n in got] == [n.name for n in want] and any(n.name in names for n in got)
        # and the suffix takes that fragment: its first nodes
        sfx = only_quantized(fp, qp, unit, result.tensor_map, f_types, index=index)
        assert [n.name for n in sfx.proto.graph.node][:len(want)] == [n.name for n in want]
