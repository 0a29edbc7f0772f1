"""The weights vs activations split matches a bias that bias correction moved to its float bias.

Our export with ``bias_correction`` writes each corrected Conv bias as int32 values that differ from
the float bias by more than one step of its grid. The split accepted a float source only within one
step, so ``compare`` of our own digits_cnn export listed both corrected biases as "2 constants of the
quantized file not matched to a float weight", and they stayed quantized (corrected) in the
activations-only figure (51.51 dB instead of 50.87 on the CLI's default file). A bias is now matched to
the float bias the same node reads at the same position (same shape) when that node's weight is
matched, and reported with its change.

Each figure is checked against the quantized file run by onnxruntime with every constant
DequantizeLinear replaced by the prepared float model's initializer, and each change against numpy.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_noise_split_as_written import _float_weights_put_in, _session

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.noise_split import noise_split

ROWS = 16


def _constant_dqs(q: onnx.ModelProto) -> list[onnx.NodeProto]:
    inits = {t.name for t in q.graph.initializer}
    return [n for n in q.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits]


def _dequantized(q: onnx.ModelProto) -> dict[str, np.ndarray]:
    """{DQ output: value} of every DequantizeLinear of an initializer of ``q``, run by onnxruntime."""
    dqs = _constant_dqs(q)
    graph = helper.make_graph(dqs, "dq", [], [helper.make_empty_tensor_value_info(n.output[0]) for n in dqs],
                              list(q.graph.initializer))
    m = helper.make_model(graph, opset_imports=list(q.opset_import))
    m.ir_version = q.ir_version
    return dict(zip([n.output[0] for n in dqs], _session(m).run(None, {}), strict=True))


def _float_names(f: onnx.ModelProto, q: onnx.ModelProto) -> dict[str, str]:
    """{constant DQ output of ``q``: the initializer the same-named node of ``f`` reads at that position}."""
    outs = {n.output[0] for n in _constant_dqs(q)}
    by_name = {n.name: n for n in f.graph.node}
    return {x: by_name[n.name].input[i] for n in q.graph.node for i, x in enumerate(n.input) if x in outs}


def _sqnr(ref: onnx.ModelProto, other: onnx.ModelProto, x: np.ndarray) -> float:
    a, b = _session(ref), _session(other)
    name = ref.graph.input[0].name
    r = np.concatenate([np.asarray(a.run(None, {name: row[None]})[0], np.float64) for row in x])
    o = np.concatenate([np.asarray(b.run(None, {name: row[None]})[0], np.float64) for row in x])
    return float(10 * np.log10(np.sum(r * r) / np.sum((r - o) ** 2)))


def _moved_biases(f: onnx.ModelProto, q: onnx.ModelProto) -> dict[str, float]:
    """{int32 DQ output: largest |dequantized - float|} of the biases of ``q`` more than one step away
    from their float bias somewhere (bias correction moved them)."""
    values, names = _dequantized(q), _float_names(f, q)
    inits = {t.name: t for t in q.graph.initializer}
    floats = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in f.graph.initializer}
    out = {}
    for n in _constant_dqs(q):
        if inits[n.input[0]].data_type != TensorProto.INT32:
            continue
        step = numpy_helper.to_array(inits[n.input[1]]).astype(np.float64)
        change = np.abs(values[n.output[0]].astype(np.float64) - floats[names[n.output[0]]])
        if (change > step).any():
            out[n.output[0]] = float(change.max())
    return out


@pytest.fixture
def corrected(corpus, tmp_path):
    """digits_cnn (prepared), our cpu-u8s8 export of it with bias correction, its path, and the eval rows."""
    folder = corpus / "digits_cnn"
    path = tmp_path / "q.onnx"
    model = api.open_model(folder / "model_opset17.onnx")
    recipe = api.make_recipe("cpu-u8s8", bias_correction=True)
    api.export(api.quantize(model, recipe, data=str(folder / "calib.npz")), path)
    with np.load(folder / "eval.npz") as npz:
        x = npz["input"][:ROWS]
    return model, onnx.load(str(path)), path, x


def test_corrected_biases_are_matched_with_their_change(corrected, tmp_path):
    model, q, _, x = corrected
    moved = _moved_biases(model.proto, q)
    assert len(moved) == 3  # the premise: bias correction moved the three quantized Conv biases beyond a step
    data = tmp_path / "rows.npz"
    np.savez(data, input=x)
    split = noise_split(model, q, str(data), samples=ROWS)
    assert split.unmatched == []  # were the three corrected biases
    assert {b.tensor: b.largest for b in split.corrected} == pytest.approx(moved, rel=1e-6)
    names = _float_names(model.proto, q)
    assert all(b.float_tensor == names[b.tensor] for b in split.corrected)
    assert split.activations_db == pytest.approx(_sqnr(model.proto, _float_weights_put_in(model.proto, q), x), abs=1e-3)
    assert split.all_db == pytest.approx(_sqnr(model.proto, q, x), abs=1e-3)


def test_a_bias_whose_weight_differs_stays_unmatched(corrected, tmp_path):
    """A float model whose Conv weight is not the file's source (scaled by 1.5: prepared differently) does
    not lend that Conv its bias either; the other Convs' corrected biases are matched."""
    model, q, _, x = corrected
    conv = next(n for n in model.proto.graph.node if n.op_type == "Conv" and len(n.input) > 2)
    other = onnx.ModelProto()
    other.CopyFrom(model.proto)
    w = next(t for t in other.graph.initializer if t.name == conv.input[1])
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.5), w.name))
    onnx.save(other, str(tmp_path / "other.onnx"))
    data = tmp_path / "rows.npz"
    np.savez(data, input=x)
    split = noise_split(api.open_model(tmp_path / "other.onnx"), q, str(data), samples=ROWS)
    readers = {x: n.name for n in q.graph.node for x in n.input}
    own = sorted(out for out in _float_names(model.proto, q) if readers[out] == conv.name)
    assert len(own) == 2 and sorted(split.unmatched) == own  # its weight and its bias
    assert len(split.corrected) == len(_moved_biases(model.proto, q)) - 1


def test_compare_prints_the_corrected_biases(corrected, corpus, capsys):
    model, q, path, _ = corrected
    folder = corpus / "digits_cnn"
    capsys.readouterr()
    assert main(["compare", str(folder / "model_opset17.onnx"), str(path), "--data", str(folder / "eval.npz"),
                 "--samples", "8"]) == 0
    out = capsys.readouterr().out
    assert "not matched to a float weight" not in out
    line = next(s for s in out.splitlines() if "matched to the float biases" in s)
    assert line.startswith("  (3 biases of the quantized file")
    moved = _moved_biases(model.proto, q)
    first = next(iter(moved))
    assert f"{first} (float {_float_names(model.proto, q)[first]}, changed by up to {moved[first]:.3g}" in line
