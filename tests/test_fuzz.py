"""Fuzzed inputs: mutated ONNX files, npz files and project files.

Every case must end in a result or a :class:`WorkbenchError` whose message names the file or a
tensor/node -- never another exception type, a hang (each case runs under an alarm) or a crash.
The drivers are the public entry points: ``api.open_model``, ``api.quantize`` (``dynamic-u8``
without data, ``cpu-u8s8`` with the mutated npz or random data) and ``project.load_project``.
Hypothesis runs a bounded number of examples (derandomized, no database) so the file stays well
under a minute; the number of cases tried per kind is printed (``pytest -s``) and recorded as a
test property.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import alarm

from workbench.core import api
from workbench.core.errors import WorkbenchError
from workbench.core.pipeline.project import load_project, new_project, save_project

FUZZ = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
#: Seconds one case may take before it counts as a hang.
CASE_TIMEOUT = 30
TRIED: Counter = Counter()
OUTCOMES: Counter = Counter()


class Hang(Exception):
    pass


def _outcome(kind: str, fn, *names: str):
    """Run ``fn``; a WorkbenchError must be one line naming one of ``names`` (the file, or a node,
    tensor or field of it) in its message (the hint does not count) and say what to do."""
    TRIED[kind] += 1
    with alarm(CASE_TIMEOUT, Hang):
        try:
            out = fn()
        except WorkbenchError as exc:
            text = str(exc)
            assert len(exc.message) > 20 and "\n" not in text.strip(), text
            assert exc.hint, f"no hint: {text}"
            assert any(n and n in exc.message for n in names), f"names none of {names[:6]}: {text}"
            OUTCOMES[kind, "refused"] += 1
            return None
    OUTCOMES[kind, "ok"] += 1
    return out


def _model_names(model) -> tuple[str, ...]:
    """The file name and every node, tensor and input name of a loaded model (what an error of a
    later step may name instead of the file)."""
    names = {model.path.name} if getattr(model, "path", None) else set()
    for node in model.proto.graph.node:
        names.update([node.name, *node.input, *node.output])
    names.update(i.name for i in model.proto.graph.initializer)
    inputs = {f"'{i.name}'" for i in model.proto.graph.input} | {f"input: {i.name}" for i in model.proto.graph.input}
    return tuple(sorted((n for n in names if n and len(n) > 1), key=len, reverse=True)) + tuple(inputs)


def _check_written(result, float_model=None) -> None:
    """A quantize that succeeded gave a model that onnx.checker accepts and onnxruntime loads, and
    runs on any feed the float model runs on (declared dims, 1 for symbolic ones)."""
    if result is None:
        return
    import onnxruntime as ort

    onnx.checker.check_model(result.proto, full_check=True)
    sess = ort.InferenceSession(result.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    if float_model is not None:
        ref = ort.InferenceSession(float_model.proto.SerializeToString(), providers=["CPUExecutionProvider"])
        try:
            ref.run(None, _feeds(ref))
        except Exception:  # noqa: BLE001 - the float model itself cannot run such a feed
            return
    sess.run(None, _feeds(sess))


def _feeds(sess) -> dict:
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in i.shape]  # the declared dims
        dtype = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(double)": np.float64,
                 "tensor(float16)": np.float16}.get(i.type, np.float32)
        feeds[i.name] = np.zeros(shape, dtype)
    return feeds


@pytest.fixture
def fuzzed():
    """A fuzz test ran cases of its own and each ended as 'ok' or as a one-line refusal (checked in
    :func:`_outcome`); only this test's cases count, whatever ran before it."""
    before = sum(TRIED.values())
    yield
    assert sum(TRIED.values()) > before, "no fuzz case ran"


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    lines = [f"  {k:<12} tried {n:4d}  ok {OUTCOMES[k, 'ok']:4d}  refused {OUTCOMES[k, 'refused']:4d}"
             for k, n in sorted(TRIED.items())]
    print(f"\nfuzz cases tried: {sum(TRIED.values())}\n" + "\n".join(lines))


# -- a small valid model -----------------------------------------------------------------------

def _base_model() -> onnx.ModelProto:
    """X[N,1,6,6] -> Conv(3x3, 4 ch) -> Relu -> Reshape -> MatMul(W[64,5]) -> Add(B) -> Y[N,5]."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "Wc"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "Bc"),
             numpy_helper.from_array(np.array([-1, 64], np.int64), "shape"),
             numpy_helper.from_array(rng.standard_normal((64, 5)).astype(np.float32), "Wm"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "Bm")]
    nodes = [helper.make_node("Conv", ["X", "Wc", "Bc"], ["C"], name="conv", kernel_shape=[3, 3],
                              pads=[0, 0, 0, 0]),
             helper.make_node("Relu", ["C"], ["R"], name="relu"),
             helper.make_node("Reshape", ["R", "shape"], ["F"], name="flat"),
             helper.make_node("MatMul", ["F", "Wm"], ["M"], name="mm"),
             helper.make_node("Add", ["M", "Bm"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 1, 6, 6])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


BASE = _base_model()
BASE_BYTES = BASE.SerializeToString()


def _open_and_quantize(path: Path, kind: str, data=None):
    model = _outcome(kind, lambda: api.open_model(path), path.name)
    if model is None:
        return
    names = (path.name, *_model_names(model))
    _check_written(_outcome(kind + "/q", lambda: api.quantize(model, api.make_recipe("dynamic-u8")), *names), model)
    if data is not None:
        _check_written(_outcome(kind + "/qs", lambda: api.quantize(model, api.make_recipe("cpu-u8s8"), data=data,
                                                                   samples=4), *names), model)


# -- ONNX bytes --------------------------------------------------------------------------------

@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(BASE_BYTES) - 1), st.integers(0, 255)), min_size=1, max_size=4))
def test_byte_flipped_onnx(tmp_path_factory, fuzzed, flips):
    data = bytearray(BASE_BYTES)
    for pos, val in flips:
        data[pos] = val
    path = tmp_path_factory.mktemp("flip") / "flipped.onnx"
    path.write_bytes(bytes(data))
    _open_and_quantize(path, "onnx-flip", {"kind": "random", "count": 2, "seed": 0})


@FUZZ
@given(cut=st.integers(0, len(BASE_BYTES) - 1))
def test_truncated_onnx(tmp_path_factory, fuzzed, cut):
    path = tmp_path_factory.mktemp("cut") / "truncated.onnx"
    path.write_bytes(BASE_BYTES[:cut])
    _open_and_quantize(path, "onnx-trunc")


# -- structural mutations ----------------------------------------------------------------------

def _drop_input(m, r):
    del m.graph.input[:]


def _drop_output(m, r):
    del m.graph.output[:]


def _wrong_input_dtype(m, r):
    m.graph.input[0].type.tensor_type.elem_type = r.choice([TensorProto.INT64, TensorProto.STRING,
                                                            TensorProto.BOOL, TensorProto.DOUBLE, 0, 99])


def _wrong_init_dtype(m, r):
    t = m.graph.initializer[r.randrange(len(m.graph.initializer))]
    t.data_type = r.choice([TensorProto.INT8, TensorProto.FLOAT16, TensorProto.STRING, TensorProto.INT64, 0, 77])


def _bad_init_dims(m, r):
    t = m.graph.initializer[r.randrange(len(m.graph.initializer))]
    t.dims[:] = r.choice([[], [0], [-3, 2], [2, 2, 2, 2, 2], [1 << 40]])


def _dangling(m, r):
    n = m.graph.node[r.randrange(len(m.graph.node))]
    n.input[r.randrange(len(n.input))] = "nowhere"


def _dangling_output(m, r):
    m.graph.output[0].name = "missing_output"


def _drop_node(m, r):
    del m.graph.node[r.randrange(len(m.graph.node))]


def _drop_init(m, r):
    del m.graph.initializer[r.randrange(len(m.graph.initializer))]


def _bad_attribute(m, r):
    conv = m.graph.node[0]
    del conv.attribute[:]
    conv.attribute.extend([r.choice([
        helper.make_attribute("kernel_shape", [5, 5]), helper.make_attribute("kernel_shape", [-1, 3]),
        helper.make_attribute("pads", [1]), helper.make_attribute("strides", [0, 0]),
        helper.make_attribute("group", 3), helper.make_attribute("dilations", [100, 100]),
        helper.make_attribute("kernel_shape", "abc"), helper.make_attribute("auto_pad", "NOPE")])])


def _unknown_attribute(m, r):
    m.graph.node[r.randrange(len(m.graph.node))].attribute.extend([helper.make_attribute("bogus", 1.5)])


def _unknown_op(m, r):
    m.graph.node[r.randrange(len(m.graph.node))].op_type = r.choice(["Frobnicate", "", "conv", "QLinearConv"])


def _odd_domain(m, r):
    m.graph.node[r.randrange(len(m.graph.node))].domain = r.choice(["com.example", "ai.onnx.ml", "com.microsoft"])


def _opset(m, r):
    m.opset_import[0].version = r.choice([0, 1, 7, 10, 12, 99, 10**6, -1])


def _ir_version(m, r):
    m.ir_version = r.choice([1, 3, 99, -5])


def _duplicate_output(m, r):
    m.graph.node[1].output[0] = "C"


def _cycle(m, r):
    m.graph.node[0].input[0] = "Y"


def _swap_nodes(m, r):
    nodes = list(m.graph.node)
    r.shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)


def _empty_names(m, r):
    for n in m.graph.node:
        n.name = ""


def _raw_size(m, r):
    t = m.graph.initializer[r.randrange(len(m.graph.initializer))]
    t.raw_data = t.raw_data[: len(t.raw_data) // 2]


def _nan_weights(m, r):
    t = m.graph.initializer[0]
    a = numpy_helper.to_array(t).copy()
    a.flat[0] = r.choice([np.nan, np.inf, -np.inf, 1e38])
    t.CopyFrom(numpy_helper.from_array(a, t.name))


def _input_shape(m, r):
    dims = m.graph.input[0].type.tensor_type.shape.dim
    d = dims[r.randrange(len(dims))]
    d.Clear()
    choice = r.choice([0, 1, 7, -1, None])
    if choice is not None:
        d.dim_value = choice


def _external_ref(m, r):
    t = m.graph.initializer[r.randrange(len(m.graph.initializer))]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=r.choice(["missing.data", "../../etc/passwd", "/etc/passwd", ""]))


def _value_info_lie(m, r):
    m.graph.value_info.extend([helper.make_tensor_value_info("C", r.choice([TensorProto.INT8, TensorProto.STRING]),
                                                             [9, 9])])


def _graph_attr(m, r):
    then = helper.make_graph([helper.make_node("Identity", ["C"], ["t"])], "t", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    m.graph.node[1].attribute.extend([helper.make_attribute("then_branch", then)])


MUTATIONS = [_drop_input, _drop_output, _wrong_input_dtype, _wrong_init_dtype, _bad_init_dims, _dangling,
             _dangling_output, _drop_node, _drop_init, _bad_attribute, _unknown_attribute, _unknown_op,
             _odd_domain, _opset, _ir_version, _duplicate_output, _cycle, _swap_nodes, _empty_names,
             _raw_size, _nan_weights, _input_shape, _external_ref, _value_info_lie, _graph_attr]


@FUZZ
@given(muts=st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3), rnd=st.randoms(use_true_random=False))
def test_structurally_mutated_onnx(tmp_path_factory, fuzzed, muts, rnd):
    m = onnx.ModelProto()
    m.CopyFrom(BASE)
    for mut in muts:
        with contextlib.suppress(IndexError):  # an earlier mutation removed what this one edits
            mut(m, rnd)
    path = tmp_path_factory.mktemp("mut") / "mutated.onnx"
    path.write_bytes(m.SerializeToString())
    _open_and_quantize(path, "onnx-struct", {"kind": "random", "count": 2, "seed": 1})


def test_every_mutation_kind_is_reachable_and_the_base_model_quantizes(tmp_path):
    """The fuzz base is valid: it loads, quantizes both ways, and each mutation changes it."""
    path = tmp_path / "base.onnx"
    path.write_bytes(BASE_BYTES)
    model = api.open_model(path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data={"kind": "random", "count": 2})
    assert sum(n.op_type == "QuantizeLinear" for n in res.proto.graph.node) >= 2
    import random
    for mut in MUTATIONS:
        m = onnx.ModelProto()
        m.CopyFrom(BASE)
        mut(m, random.Random(0))
        assert m.SerializeToString() != BASE_BYTES, mut.__name__


# -- npz files ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base_model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("npzbase") / "model.onnx"
    path.write_bytes(BASE_BYTES)
    return path


@pytest.fixture(scope="module")
def base_model(base_model_path):
    return api.open_model(base_model_path)


def _npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


GOOD_NPZ = _npz_bytes({"X": np.random.default_rng(0).standard_normal((4, 1, 6, 6)).astype(np.float32)})


def _quantize_with(model, path: Path, kind: str):
    _check_written(_outcome(kind, lambda: api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(path), samples=4),
                            path.name, *_model_names(model)))


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, len(GOOD_NPZ) - 1), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.integers(0, len(GOOD_NPZ))))
def test_byte_flipped_npz(tmp_path_factory, fuzzed, base_model, flips, cut):
    data = bytearray(GOOD_NPZ)
    for pos, val in flips:
        data[pos] = val
    path = tmp_path_factory.mktemp("npz") / "calib.npz"
    path.write_bytes(bytes(data[:cut] if cut is not None else data))
    _quantize_with(base_model, path, "npz-bytes")


_DTYPES = [np.float32, np.float64, np.float16, np.int64, np.uint8, np.bool_, np.complex64, "U3", "S2", object]


@st.composite
def _npz_arrays(draw):
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    key = draw(st.sampled_from(["X", "x", "X::0", "Y", "", "X/0", "X::a"]))
    shape = draw(st.sampled_from([(4, 1, 6, 6), (1, 6, 6), (4, 1, 6, 7), (0, 1, 6, 6), (4,), (), (4, 1, 6, 6, 1),
                                  (2, 3, 6, 6)]))
    dtype = draw(st.sampled_from(_DTYPES))
    if dtype is object:
        arr = np.empty(shape, dtype=object)
    else:
        arr = (rng.standard_normal(shape) * 3).astype(dtype)
    special = draw(st.sampled_from([None, np.nan, np.inf, 1e30]))
    if special is not None and arr.size and arr.dtype.kind == "f":
        with np.errstate(over="ignore"):
            arr.flat[0] = special
    arrays = {key: arr}
    if draw(st.booleans()):
        arrays["extra"] = rng.standard_normal(3)
    return arrays


@FUZZ
@given(arrays=_npz_arrays())
def test_structurally_mutated_npz(tmp_path_factory, fuzzed, base_model, arrays):
    path = tmp_path_factory.mktemp("npzs") / "calib.npz"
    buf = io.BytesIO()
    try:
        np.savez(buf, **{k or "arr_0": v for k, v in arrays.items()})
    except ValueError:
        return
    path.write_bytes(buf.getvalue())
    _quantize_with(base_model, path, "npz-struct")


def test_npz_with_pickled_object_array_is_refused_without_unpickling(tmp_path, base_model):
    marker = tmp_path / "pickle-ran"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    arr = np.empty((1,), dtype=object)
    arr[0] = Evil()
    path = tmp_path / "evil.npz"
    np.savez(path, X=arr)
    with pytest.raises(WorkbenchError, match="evil.npz"):
        api.quantize(base_model, api.make_recipe("cpu-u8s8"), data=str(path))
    assert not marker.exists()


def test_npz_zip_bomb_like_member_is_refused(tmp_path, base_model):
    """A member whose header claims a huge array is refused (DataError), not allocated."""
    path = tmp_path / "huge.npz"
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f4", "fortran_order": False,
                                               "shape": (1 << 20, 1, 6, 6)})
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("X.npy", hdr.getvalue() + b"\0" * 64)
    with pytest.raises(WorkbenchError, match="huge.npz"):
        api.quantize(base_model, api.make_recipe("cpu-u8s8"), data=str(path))


# -- project files -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def project_doc(tmp_path_factory, base_model_path):
    folder = base_model_path.parent
    (folder / "calib.npz").write_bytes(GOOD_NPZ)
    proj = new_project(base_model_path, api.make_recipe("cpu-u8s8"), data=folder / "calib.npz", samples=4)
    path = save_project(proj, folder / "p.wbproj")
    return json.loads(path.read_text())


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
    max_leaves=6)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _mutate_json(doc, path, action, value):
    if not path:
        return value if action == "set" else doc
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    if action == "delete":
        del parent[key]
    elif action == "set":
        parent[key] = value
    elif action == "wrap":
        parent[key] = [parent[key]]
    elif action == "stringify":
        parent[key] = json.dumps(parent[key])
    return doc


@FUZZ
@given(data=st.data())
def test_mutated_project_files(tmp_path_factory, fuzzed, base_model_path, project_doc, data):
    doc = json.loads(json.dumps(project_doc))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        where = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["delete", "set", "wrap", "stringify"]))
        doc = _mutate_json(doc, where, action, data.draw(_JSON_VALUES))
    folder = base_model_path.parent
    path = folder / f"fuzz-{uuid.uuid4().hex}.wbproj"
    text = json.dumps(doc)
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(text)))
        text = text[:cut]
    path.write_text(text)
    try:
        project = _outcome("project", lambda: load_project(path), path.name)
        if project is not None:
            out = _outcome("project/replay", lambda: api.replay_project(path), path.name)
            _check_written(out[1] if out is not None else None)
    finally:
        path.unlink()
