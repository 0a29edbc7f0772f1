"""Bias correction puts the corrected int32 biases into the model it wrote (writers.bias_patch) instead of writing
the plan a second time: the same bytes as the second write, and a second write wherever the patch cannot tell."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.model.load import load_model
from workbench.core.pipeline import write_passes
from workbench.core.pipeline.write_passes import corrected_model
from workbench.core.transforms.bias_correction import correctable_units
from workbench.core.writers.bias_patch import patch_biases
from workbench.core.writers.registry import write_model


def _shifts(model, plan, size: float) -> dict[str, np.ndarray]:
    """A shift per output channel of every correctable Conv bias: ``size`` * (channel index + 1)."""
    return {u.bias: size * np.arange(1, model.initializer(u.bias).size + 1) for u in correctable_units(plan)}


@pytest.fixture
def digits(corpus):
    folder = corpus / "digits_cnn"
    model = load_model(folder / "model_opset17.onnx")
    res = api.quantize(model, api.Recipe(preset="cpu-u8s8"), data=folder / "calib.npz", samples=8)
    return model, res


def test_the_patched_model_is_the_bytes_of_a_second_write(digits):
    model, res = digits
    shifts = _shifts(model, res.plan, 0.01)
    assert len(shifts) == 3
    fixed = corrected_model(model, shifts)
    first = write_model(model, res.plan, res.qparams)
    assert len(first.biases) == 4 and first.value_info is not None  # the value_info the copy declares is kept too
    before = first.proto.SerializeToString()
    full = write_model(fixed, res.plan, res.qparams).proto.SerializeToString()
    assert full != before
    patched = patch_biases(first, fixed, shifts)
    assert patched is not None
    assert patched.proto.SerializeToString() == full


def test_a_bias_whose_weight_scale_must_be_raised_is_written_again(digits):
    model, res = digits
    shifts = _shifts(model, res.plan, 1e6)  # beyond int32 at input_scale * weight_scale: the weight scale is raised
    fixed = corrected_model(model, shifts)
    first = write_model(model, res.plan, res.qparams)
    before = first.proto.SerializeToString()
    assert patch_biases(first, fixed, shifts) is None
    assert first.proto.SerializeToString() == before  # left as it was
    again = write_model(fixed, res.plan, res.qparams)
    assert any(s.raised for s in again.biases)


def test_a_bias_the_writer_keeps_float_is_written_again(digits):
    model, res = digits
    shifts = _shifts(model, res.plan, 0.01)
    first = write_model(model, res.plan, res.qparams)
    first.biases = first.biases[1:]  # as if the first Conv's bias had stayed float
    assert patch_biases(first, corrected_model(model, shifts), shifts) is None


@pytest.mark.parametrize(("name", "file"), [("digits_cnn", "model_opset17.onnx"), ("ppocrv4_rec", "model.onnx")])
def test_quantize_with_bias_correction_writes_the_same_bytes_patched_or_not(corpus, monkeypatch, name, file):
    folder = corpus / name
    model = load_model(folder / file)
    recipe = api.Recipe(preset="cpu-u8s8", bias_correction=True)
    firsts = []

    def no_patch(written, fixed, shifts):
        firsts.append({i.name: i.SerializeToString() for i in written.proto.graph.initializer})
        return None

    monkeypatch.setattr(write_passes, "patch_biases", no_patch)
    want = api.quantize(model, recipe, data=folder / "calib.npz", samples=8)
    patched = []

    def spy(written, fixed, shifts):
        got = patch_biases(written, fixed, shifts)
        patched.append([s for s in written.biases if s.raised] if got is not None else None)
        return got

    monkeypatch.setattr(write_passes, "patch_biases", spy)
    res = api.quantize(model, recipe, data=folder / "calib.npz", samples=8)
    assert len(patched) == 1 and patched[0] is not None
    assert res.proto.SerializeToString() == want.proto.SerializeToString()
    assert [i.message for i in res.issues] == [i.message for i in want.issues]
    raised = patched[0]
    assert len(raised) == {"digits_cnn": 0, "ppocrv4_rec": 4}[name]  # dead channels' weight scales raised
    final = {i.name: i.SerializeToString() for i in res.proto.graph.initializer}
    # the corrected biases of those Convs are patched in, their weights written again on the same raised scales
    assert all(final[s.q_name] != firsts[0][s.q_name] for s in raised)
    assert all(final[n] == firsts[0][n] for s in raised for n in s.weight_inits)


def test_weights_on_a_raised_scale_are_requantized_as_a_second_write_does(digits):
    model, res = digits
    big = corrected_model(model, _shifts(model, res.plan, -1e6))  # biases of 1e6 and more: weight scales raised
    shifts = _shifts(big, res.plan, 10.0)  # moves each raised scale, not the channels raised nor the printed factor
    first = write_model(big, res.plan, res.qparams)
    raised = [s for s in first.biases if s.raised]
    assert len(raised) == 3
    before = {i.name: i.SerializeToString() for i in first.proto.graph.initializer}
    fixed = corrected_model(big, shifts)
    full = write_model(fixed, res.plan, res.qparams).proto.SerializeToString()
    patched = patch_biases(first, fixed, shifts)
    assert patched is not None
    assert patched.proto.SerializeToString() == full
    after = {i.name: i.SerializeToString() for i in patched.proto.graph.initializer}
    assert all(after[s.weight_inits[1]] != before[s.weight_inits[1]] for s in raised)  # other weight scales


def _convs(folder, kind: str):
    """A small Conv model of ``kind`` and its calibration file (x: 6 rows of (1, 4, 8, 8))."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)

    def init(name, *shape, k=1.0):
        return numpy_helper.from_array((rng.standard_normal(shape) * k).astype(np.float32), name)

    if kind == "depthwise":
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c1", group=4, pads=[1] * 4)]
        inits = [init("w", 4, 1, 3, 3, k=1e-3), init("b", 4, k=3e4)]
    else:
        shared = kind == "shared bias"
        nodes = [helper.make_node("Conv", ["x", "w", "b1"], ["a"], name="c1", pads=[1] * 4),
                 helper.make_node("Relu", ["x"], ["xr"], name="r"),
                 helper.make_node("Conv", ["xr", "w2" if shared else "w", "b1" if shared else "b2"], ["b"], name="c2",
                                  pads=[1] * 4),
                 helper.make_node("Add", ["a", "b"], ["y"], name="add")]
        inits = [init("w", 4, 4, 3, 3, k=1e-3), init("b1", 4, k=3e4)]
        inits += [init("w2", 4, 4, 3, 3)] if shared else [init("b2", 4, k=3e4)]
    g = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), folder / "m.onnx")
    np.savez(folder / "m.npz", x=rng.standard_normal((6, 1, 4, 8, 8)).astype(np.float32))
    return folder / "m.onnx", folder / "m.npz"


@pytest.mark.parametrize(("kind", "preset", "exclude", "patched"), [
    ("shared weight", "cpu-u8s8", [], True), ("shared weight", "a16w8", [], True), ("depthwise", "s8s8", [], True),
    ("shared bias", "cpu-u8s8", [], True), ("shared bias", "cpu-u8s8", ["c2"], False)])
def test_raised_shared_grouped_and_excluded_biases_write_what_a_second_write_does(tmp_path, monkeypatch, kind, preset,
                                                                                 exclude, patched):
    """Weights shared by two Convs whose biases both raise its scale (per channel), a depthwise Conv's raised bias,
    a bias shared by two Convs, and that bias still read by a Conv kept float (written again): the quantize with
    the patch writes the bytes and issues of the one without it."""
    path, data = _convs(tmp_path, kind)
    recipe = api.Recipe(preset=preset, bias_correction=True, exclude=exclude)
    monkeypatch.setattr(write_passes, "patch_biases", lambda written, fixed, shifts: None)
    want = api.quantize(load_model(path), recipe, data=data, samples=6)
    used = []

    def spy(written, fixed, shifts):
        got = patch_biases(written, fixed, shifts)
        used.append(got is not None)
        return got

    monkeypatch.setattr(write_passes, "patch_biases", spy)
    res = api.quantize(load_model(path), recipe, data=data, samples=6)
    assert used == [patched]
    assert res.proto.SerializeToString() == want.proto.SerializeToString()
    assert [i.message for i in res.issues] == [i.message for i in want.issues]
    raised = [i for i in res.issues if i.code == IssueCode.BIAS_OVERFLOW and i.severity == "warning"]
    assert len(raised) == {"shared weight": 2, "depthwise": 1, "shared bias": 1}[kind]  # c2's own weight is not tiny
