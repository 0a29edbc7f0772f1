"""Data sources: npz layouts, npy, folders, images, Python readers, random; validation errors."""

from __future__ import annotations

import json
import tracemalloc
import zipfile

import numpy as np
import pytest
from onnx import TensorProto, helper

from workbench.core.data.loader import open_data
from workbench.core.errors import DataError
from workbench.core.model.load import load_model, prepare_proto

RNG = np.random.default_rng(1)


def _model(inputs, out_shape=None):
    """Identity-ish model: each input goes through Identity to an output of the same type."""
    vis, outs, nodes = [], [], []
    for name, etype, shape in inputs:
        vis.append(helper.make_tensor_value_info(name, etype, shape))
        outs.append(helper.make_tensor_value_info(f"{name}_out", etype, None))
        nodes.append(helper.make_node("Identity", [name], [f"{name}_out"], name=f"id_{name}"))
    g = helper.make_graph(nodes, "g", vis, outs)
    return prepare_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))


def _img_model(shape=("N", 3, 4, 6)):
    return _model([("images", TensorProto.FLOAT, list(shape))])


@pytest.fixture
def cnn():
    return _model([("x", TensorProto.FLOAT, ["N", 3, 4, 4])])


def _all(src, bs=1):
    return list(src.batches(bs))


# -- npz layouts -------------------------------------------------------------------------------

def test_batch_layout_samples_and_batches(tmp_path, cnn):
    a = RNG.standard_normal((10, 3, 4, 4)).astype(np.float32)
    np.savez(tmp_path / "c.npz", x=a, gt_label=np.arange(10))
    before = (tmp_path / "c.npz").read_bytes()
    src = open_data(tmp_path / "c.npz", cnn)
    assert src.layout == "batch" and src.num_samples() == 10
    assert src.describe() == f"{tmp_path / 'c.npz'}: npz, batch layout, 10 samples"
    feeds = _all(src, 4)
    assert [f["x"].shape[0] for f in feeds] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([f["x"] for f in feeds]), a)
    singles = list(src.samples(3))
    assert len(singles) == 3 and singles[1]["x"].shape == (1, 3, 4, 4)
    np.testing.assert_array_equal(singles[1]["x"], a[1:2])
    np.testing.assert_array_equal(src.labels()["gt_label"], np.arange(10))
    assert [idx for idx, _ in src.indexed_batches(4, limit=6)] == [[0, 1, 2, 3], [4, 5]]
    assert (tmp_path / "c.npz").read_bytes() == before


def test_stacked_layout_detected_and_forced(tmp_path):
    fixed = _model([("x", TensorProto.FLOAT, [1, 3, 4, 4])])
    a = RNG.standard_normal((5, 1, 3, 4, 4)).astype(np.float32)
    np.savez(tmp_path / "s.npz", x=a)
    src = open_data(tmp_path / "s.npz", fixed)
    assert src.layout == "stacked" and src.num_samples() == 5
    feeds = _all(src, 8)  # fixed batch of 1: one sample per feed
    assert len(feeds) == 5 and feeds[2]["x"].shape == (1, 3, 4, 4)
    np.testing.assert_array_equal(feeds[2]["x"], a[2])
    b = RNG.standard_normal((5, 3, 4, 4)).astype(np.float32)
    np.savez(tmp_path / "b.npz", x=b)
    with pytest.raises(DataError, match=r"b\.npz.*'x'.*rank 4.*fixes|b\.npz.*'x'"):
        open_data({"kind": "npz", "path": str(tmp_path / "b.npz"), "layout": "stacked"}, fixed)


def test_stacked_rows_with_dynamic_batch_are_concatenated(tmp_path):
    m = _model([("x", TensorProto.FLOAT, ["B", 2]), ("s", TensorProto.INT64, [])])
    np.savez(tmp_path / "d.npz", x=RNG.standard_normal((6, 1, 2)).astype(np.float32), s=np.arange(6))
    src = open_data(tmp_path / "d.npz", m)
    assert src.layout == "stacked" and not src.can_batch  # a scalar input has no batch axis
    feeds = _all(src, 4)
    assert len(feeds) == 6 and feeds[3]["s"].shape == () and int(feeds[3]["s"]) == 3


def test_fixed_batch_of_k_in_batch_layout(tmp_path):
    m = _model([("x", TensorProto.FLOAT, [2, 3])])
    np.savez(tmp_path / "k.npz", x=np.arange(24, dtype=np.float32).reshape(8, 3))
    src = open_data(tmp_path / "k.npz", m)
    assert src.num_samples() == 4 and _all(src)[1]["x"].tolist() == [[6, 7, 8], [9, 10, 11]]
    np.savez(tmp_path / "k7.npz", x=np.zeros((7, 3), np.float32))
    with pytest.raises(DataError, match=r"k7\.npz.*7 rows.*fixed batch of 2"):
        open_data(tmp_path / "k7.npz", m)


def test_ragged_keys_are_single_samples(tmp_path):
    m = _model([("X", TensorProto.FLOAT, [1, "seq", 16])])
    arrays = {f"X::{i}": RNG.standard_normal((1, t, 16)).astype(np.float32) for i, t in enumerate((5, 7, 9))}
    np.savez(tmp_path / "r.npz", **arrays)
    src = open_data(tmp_path / "r.npz", m)
    assert src.num_samples() == 3
    assert [f["X"].shape[1] for f in _all(src, 4)] == [5, 7, 9]  # different shapes are never concatenated
    np.savez(tmp_path / "gap.npz", **{"X::0": arrays["X::0"], "X::2": arrays["X::2"]})
    with pytest.raises(DataError, match=r"gap\.npz.*ragged keys for input 'X'"):
        open_data(tmp_path / "gap.npz", m)


def test_npy_and_folder(tmp_path, cnn):
    a = RNG.standard_normal((3, 3, 4, 4)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    src = open_data(tmp_path / "a.npy", cnn)
    assert src.kind == "npy" and src.num_samples() == 3
    folder = tmp_path / "f"
    folder.mkdir()
    np.savez(folder / "0.npz", x=a[:2])
    np.save(folder / "1.npy", a[2:])
    src = open_data(folder, cnn)
    assert src.num_samples() == 3 and open_data(src.to_json(), cnn).num_samples() == 3
    np.testing.assert_array_equal(np.concatenate([f["x"] for f in _all(src)]), a)
    two = _model([("a", TensorProto.FLOAT, [1]), ("b", TensorProto.FLOAT, [1])])
    with pytest.raises(DataError, match=r"a\.npy holds one array but the model has 2 inputs \(a, b\)"):
        open_data(tmp_path / "a.npy", two)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="empty.*no .npz"):
        open_data(tmp_path / "empty", cnn)


# -- validation errors -------------------------------------------------------------------------

def test_missing_input_names_file_input_and_arrays_found(tmp_path):
    m = _model([("input_ids", TensorProto.INT64, ["B", "S"]), ("attention_mask", TensorProto.INT64, ["B", "S"])])
    np.savez(tmp_path / "calib.npz", attention_mask=np.ones((2, 5), np.int64), ids=np.ones((2, 5), np.int64))
    with pytest.raises(DataError) as err:
        open_data(tmp_path / "calib.npz", m)
    msg = str(err.value)
    assert "calib.npz has no array for input 'input_ids'; arrays found: attention_mask, ids" in msg
    assert "\n" not in msg


def test_wrong_rank_fixed_dim_and_dtype(tmp_path, cnn):
    np.savez(tmp_path / "rank.npz", x=np.zeros((2, 4, 4), np.float32))
    with pytest.raises(DataError, match=r"rank\.npz: array 'x' for input 'x'.*rank 3.*rank 4"):
        open_data(tmp_path / "rank.npz", cnn)
    np.savez(tmp_path / "dim.npz", x=np.zeros((2, 1, 4, 4), np.float32))
    with pytest.raises(DataError, match=r"dim\.npz: array for input 'x'.* \[1, 1, 4, 4\].*fixes \[N, 3, 4, 4\].*axis 1"):
        open_data(tmp_path / "dim.npz", cnn)
    np.savez(tmp_path / "int.npz", x=np.zeros((2, 3, 4, 4), np.int32))
    with pytest.raises(DataError, match=r"int\.npz: array for input 'x' has dtype int32.*float32 \(int vs float\)"):
        open_data(tmp_path / "int.npz", cnn)
    a = RNG.standard_normal((2, 3, 4, 4))
    np.savez(tmp_path / "f64.npz", x=a)
    src = open_data(tmp_path / "f64.npz", cnn)
    assert any("float64, cast to float32" in n for n in src.notes)
    feed = _all(src)[0]
    assert feed["x"].dtype == np.float32 and np.allclose(feed["x"], a[:1])
    ints = _model([("ids", TensorProto.INT64, ["B", 3])])
    np.savez(tmp_path / "i32.npz", ids=np.array([[1, 2, 3]], np.int32))
    assert _all(open_data(tmp_path / "i32.npz", ints))[0]["ids"].dtype == np.int64
    np.savez(tmp_path / "u64.npz", ids=np.array([[2**63, 0, 0]], np.uint64))
    with pytest.raises(DataError, match=r"u64\.npz.*'ids'.*do not fit int64"):
        _all(open_data(tmp_path / "u64.npz", ints))


def test_shared_symbolic_dim_must_agree_across_inputs(tmp_path):
    m = _model([("input_ids", TensorProto.INT64, ["batch", "sequence"]),
                ("attention_mask", TensorProto.INT64, ["batch", "sequence"])])
    np.savez(tmp_path / "seq.npz", input_ids=np.ones((4, 32), np.int64), attention_mask=np.ones((4, 16), np.int64))
    with pytest.raises(DataError, match=r"seq\.npz: dimension 'sequence' is 32 in input 'input_ids' but 16 in "
                                        r"input 'attention_mask'"):
        open_data(tmp_path / "seq.npz", m)
    np.savez(tmp_path / "ok.npz", input_ids=np.ones((4, 32), np.int64), attention_mask=np.ones((4, 32), np.int64))
    assert open_data(tmp_path / "ok.npz", m).num_samples() == 4


def test_zero_samples_mismatched_counts_unreadable_and_mixed_layouts(tmp_path, cnn):
    np.savez(tmp_path / "zero.npz", x=np.zeros((0, 3, 4, 4), np.float32))
    with pytest.raises(DataError, match=r"zero\.npz: holds zero samples \(arrays for 'x' have 0 rows\)"):
        open_data(tmp_path / "zero.npz", cnn)
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 this is not a zip")
    with pytest.raises(DataError, match=r"junk\.npz: not a readable"):
        open_data(tmp_path / "junk.npz", cnn)
    two = _model([("a", TensorProto.FLOAT, ["N", 2]), ("b", TensorProto.FLOAT, ["N", 2])])
    np.savez(tmp_path / "n.npz", a=np.zeros((3, 2), np.float32), b=np.zeros((4, 2), np.float32))
    with pytest.raises(DataError, match=r"n\.npz: inputs have different sample counts \('a': 3, 'b': 4\)"):
        open_data(tmp_path / "n.npz", two)
    np.savez(tmp_path / "mix.npz", a=np.zeros((3, 2), np.float32), b=np.zeros((3, 1, 2), np.float32))
    with pytest.raises(DataError, match=r"mix\.npz: arrays mix layouts"):
        open_data(tmp_path / "mix.npz", two)
    with pytest.raises(DataError, match=r"nothere\.npz: no such data file"):
        open_data(tmp_path / "nothere.npz", cnn)
    with pytest.raises(DataError, match="unknown kind"):
        open_data({"kind": "csv", "path": "x"}, cnn)
    with pytest.raises(DataError, match="unknown option"):
        open_data({"kind": "random", "count": 2, "colour": 1}, cnn)


# -- images ------------------------------------------------------------------------------------

def _write_images(folder, n=2):
    from PIL import Image

    folder.mkdir()
    pixels = [RNG.integers(0, 256, (4, 6, 3), dtype=np.uint8) for _ in range(n)]
    for i, p in enumerate(pixels):
        Image.fromarray(p, "RGB").save(folder / f"{i}.png")
    return pixels


def test_images_preprocessing_numbers(tmp_path):
    pixels = _write_images(tmp_path / "img")
    spec = {"kind": "images", "path": str(tmp_path / "img"), "size": [4, 6], "layout": "NCHW",
            "channel_order": "BGR", "mean": [0.5, 0.4, 0.3], "std": [0.2, 0.25, 0.5], "scale": 1 / 255}
    src = open_data(spec, _img_model())
    assert src.num_samples() == 2
    feeds = _all(src, 2)
    assert len(feeds) == 1 and feeds[0]["images"].shape == (2, 3, 4, 6)
    want = pixels[1].astype(np.float32) / 255
    want = (want[:, :, ::-1] - np.array([0.5, 0.4, 0.3], np.float32)) / np.array([0.2, 0.25, 0.5], np.float32)
    np.testing.assert_allclose(feeds[0]["images"][1], want.transpose(2, 0, 1), rtol=1e-5, atol=1e-5)
    nhwc = open_data(dict(spec, layout="NHWC", channel_order="RGB", mean=None, std=None), _img_model(("N", 4, 6, 3)))
    np.testing.assert_allclose(_all(nhwc)[0]["images"][0], pixels[0] / 255, rtol=1e-6, atol=1e-6)
    again = open_data(src.to_json(), _img_model())
    np.testing.assert_array_equal(_all(again, 2)[0]["images"], feeds[0]["images"])


def test_grayscale_model_gets_luminance(tmp_path):
    from PIL import Image

    pixels = _write_images(tmp_path / "img", 1)
    src = open_data({"kind": "images", "path": str(tmp_path / "img"), "size": [4, 6]},
                    _img_model((1, 1, 4, "image_width")))
    feed = _all(src)[0]["images"]
    want = np.asarray(Image.fromarray(pixels[0], "RGB").convert("L"), np.float32) / 255
    assert src.layout == "NCHW" and feed.shape == (1, 1, 4, 6)
    np.testing.assert_allclose(feed[0, 0], want, rtol=1e-6, atol=1e-6)


def test_letterbox_and_center_crop(tmp_path):
    from PIL import Image

    (tmp_path / "wide").mkdir()
    px = np.zeros((2, 8, 3), np.uint8)
    px[:, :4] = 200  # left half bright
    Image.fromarray(px, "RGB").save(tmp_path / "wide" / "a.png")
    base = {"kind": "images", "path": str(tmp_path / "wide"), "size": [8, 8], "scale": 1.0}
    box = _all(open_data(dict(base, resize="letterbox"), _img_model(("N", 3, 8, 8))))[0]["images"][0, 0]
    assert box.shape == (8, 8) and (box[:3] == 114).all() and (box[5:] == 114).all()  # 2x8 -> 2x8 band centred
    assert (box[3:5, :4] == 200).all() and (box[3:5, 4:] == 0).all()
    crop = _all(open_data(dict(base, resize="center_crop"), _img_model(("N", 3, 8, 8))))[0]["images"][0, 0]
    assert crop.shape == (8, 8) and (crop[:, :2] == 200).all() and (crop[:, 6:] == 0).all()  # centre of 32x8
    with pytest.raises(DataError, match="unknown resize mode 'squash'"):
        open_data(dict(base, resize="squash"), _img_model(("N", 3, 8, 8)))


def test_images_resize_defaults_and_errors(tmp_path):
    _write_images(tmp_path / "img", 1)
    src = open_data(tmp_path / "img", _img_model(("N", 3, 8, 12)))  # a plain folder of images
    assert src.kind == "images" and _all(src)[0]["images"].shape == (1, 3, 8, 12)
    assert any("default preprocessing" in n for n in src.notes)
    with pytest.raises(DataError, match=r"img: input 'images' has dynamic height/width.*size"):
        open_data({"kind": "images", "path": str(tmp_path / "img")}, _img_model(("N", 3, "H", "W")))
    (tmp_path / "img" / "bad.png").write_bytes(b"not an image")
    with pytest.raises(DataError, match=r"bad\.png: cannot read the image"):
        _all(open_data({"kind": "images", "path": str(tmp_path / "img"), "size": [4, 6]}, _img_model()))


# -- python reader -----------------------------------------------------------------------------

READER = """
import numpy as np
NUM_SAMPLES = 3
def samples():
    for i in range(3):
        yield {"x": np.full((1, 3, 4, 4), i, np.float32)}
"""


def test_python_reader_needs_opt_in_and_validates(tmp_path, cnn):
    path = tmp_path / "reader.py"
    path.write_text(READER)
    with pytest.raises(DataError, match=r"reader\.py: a Python data reader runs code.*allow_code"):
        open_data({"kind": "python", "path": str(path)}, cnn)
    with pytest.raises(DataError, match="allow_code"):
        open_data(path, cnn)
    src = open_data({"kind": "python", "path": str(path), "allow_code": True}, cnn)
    assert src.num_samples() == 3
    feeds = _all(src, 2)
    assert [f["x"].shape[0] for f in feeds] == [2, 1] and float(feeds[1]["x"].max()) == 2.0
    again = _all(open_data(src.to_json(), cnn), 2)
    assert all(np.array_equal(a["x"], b["x"]) for a, b in zip(feeds, again, strict=True))
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\ndef samples():\n    yield {'y': np.zeros(1)}\n")
    with pytest.raises(DataError, match=r"bad\.py \(sample 0\) has no array for input 'x'; arrays found: y"):
        _all(open_data({"kind": "python", "path": str(bad), "allow_code": True}, cnn))
    boom = tmp_path / "boom.py"
    boom.write_text("def samples():\n    raise RuntimeError('disk gone')\n    yield {}\n")
    with pytest.raises(DataError, match=r"boom\.py: samples\(\) raised RuntimeError.*disk gone"):
        _all(open_data({"kind": "python", "path": str(boom), "allow_code": True}, cnn))


# -- random ------------------------------------------------------------------------------------

def test_random_source_dtypes_shapes_and_determinism():
    m = _model([("ids", TensorProto.INT64, ["batch", "sequence"]), ("x", TensorProto.FLOAT16, [1, 3]),
                ("flag", TensorProto.BOOL, [])])
    src = open_data({"kind": "random", "count": 3, "seed": 5, "dims": {"sequence": 7}}, m)
    feeds = _all(src)
    assert len(feeds) == 3 and src.num_samples() == 3
    assert feeds[0]["ids"].shape == (1, 7) and feeds[0]["ids"].dtype == np.int64
    assert feeds[0]["ids"].min() >= 0 and feeds[0]["ids"].max() < 2
    assert feeds[0]["x"].dtype == np.float16 and feeds[0]["flag"].dtype == np.bool_
    again = _all(open_data(src.to_json(), m))
    for a, b in zip(feeds, again, strict=True):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(DataError, match="count must be a positive integer"):
        open_data({"kind": "random", "count": 0}, m)


def test_to_json_round_trip_for_arrays(tmp_path, cnn):
    a = RNG.standard_normal((4, 1, 3, 4, 4)).astype(np.float32)
    np.savez(tmp_path / "s.npz", x=a)
    src = open_data({"kind": "npz", "path": str(tmp_path / "s.npz"), "layout": "stacked"}, cnn)
    spec = json.loads(json.dumps(src.to_json()))
    assert spec == {"kind": "npz", "path": str(tmp_path / "s.npz"), "layout": "stacked"}
    again = open_data(spec, cnn)
    for f, g in zip(_all(src, 2), _all(again, 2), strict=True):
        np.testing.assert_array_equal(f["x"], g["x"])
    no_kind = open_data({"path": str(tmp_path / "s.npz"), "layout": "stacked"}, cnn)  # kind from the suffix
    assert no_kind.kind == "npz" and no_kind.num_samples() == 4


# -- corpus (slow) -----------------------------------------------------------------------------

@pytest.mark.slow
def test_every_corpus_npz_opens_with_its_layout_and_count(corpus):
    manifest = json.loads((corpus.parent / "manifest.json").read_text())
    for entry in manifest["models"]:
        model = load_model(corpus.parent / entry["file"])
        for split, arrays in (("calib_npz", entry["calib_arrays"]), ("eval_npz", entry["eval_arrays"])):
            path = corpus.parent / entry[split]
            src = open_data(path, model)
            count = next(v["shape"][0] for k, v in arrays.items() if not k.startswith("gt_"))
            assert (src.layout, src.num_samples()) == (entry["npz_layout"], count), (entry["name"], split)
            first = next(iter(src.batches(4)))
            for inp in model.inputs:
                assert list(first[inp.name].shape[1:] if src.can_batch else first[inp.name].shape) == (
                    entry["feed_shapes"][inp.name][1:] if src.can_batch else entry["feed_shapes"][inp.name])
            assert set(src.labels()) == {k for k in arrays if k.startswith("gt_")}


def test_corrupted_npz_opens_or_raises_data_error_only(tmp_path):
    """Flip 1-2 random bytes of a stored and of a compressed .npz: opening and reading either
    works or raises DataError naming the file, never zlib/zipfile/numpy exceptions."""
    import io

    m = _model([("x", TensorProto.FLOAT, ["N", 3])])
    rng = np.random.default_rng(3)
    path = tmp_path / "bad.npz"
    refused = 0
    for save in (np.savez, np.savez_compressed):
        buf = io.BytesIO()
        save(buf, x=np.arange(12, dtype=np.float32).reshape(4, 3), gt_y=np.arange(4))
        for _ in range(120):
            data = bytearray(buf.getvalue())
            for _ in range(int(rng.integers(1, 3))):
                data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
            path.write_bytes(bytes(data))
            try:
                src = open_data(path, m)
                _all(src, 2)
                src.labels()
            except DataError as exc:
                assert "bad.npz" in str(exc)
                refused += 1
    assert refused > 0


# -- lazy rows ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,save,layout", [
    ("c.npz", np.savez_compressed, "batch"),   # deflated member: streamed
    ("c.npz", np.savez, "batch"),              # stored member: streamed
    ("c.npy", np.save, "batch"),               # memory-mapped
    ("c.npz", np.savez_compressed, "stacked"),
])
def test_only_the_rows_asked_for_are_read(tmp_path, name, save, layout):
    """8 of 4096 rows (4 MiB): the reads allocate about a batch, never the file (tracemalloc counts
    numpy's buffers); the rows are exactly the file's first 8."""
    shape = ["N", 256] if layout == "batch" else [1, 256]
    model = _model([("x", TensorProto.FLOAT, shape)])
    rows = RNG.standard_normal((4096, 256) if layout == "batch" else (4096, 1, 256)).astype(np.float32)
    path = tmp_path / name
    save(path, **{"x": rows}) if name.endswith(".npz") else save(path, rows)
    src = open_data(path, model)
    assert src.layout == layout and src.num_samples() == 4096
    tracemalloc.start()
    try:
        got = [f["x"].copy() for f in src.batches(4, limit=8)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(np.concatenate(got), rows[:8].reshape(8, 256))
    assert peak < rows.nbytes // 32, f"peak {peak} bytes for 8 rows of a {rows.nbytes}-byte array"


def test_stored_npz_members_are_mapped_not_copied(tmp_path):
    """np.savez stores its members uncompressed: their rows are views of the file mapped in memory (no
    copy into a fresh array), equal to numpy.load's. A member's data starts after its name, so of four
    files whose member names are 1-4 characters long (data offsets 4 consecutive values) at least one
    is mapped; rows at an offset not aligned for float32 are copied: every row is aligned. Deflated
    members are read into fresh arrays, with the same values. A second member (behind the first)
    reads right too."""
    from workbench.core.data.npy_rows import RowReader

    a = RNG.standard_normal((7, 3, 5)).astype(np.float32)
    b = RNG.integers(0, 1000, (7, 11)).astype(np.int64)
    for save in (np.savez, np.savez_compressed):
        mapped = 0
        for key in ("a", "ab", "abc", "abcd"):
            path = tmp_path / f"{save.__name__}_{key}.npz"
            save(path, **{key: a, "gt_b": b})
            with RowReader(path, key) as reader, RowReader(path, "gt_b") as second:
                rows = [reader.take(2), reader.take(4), reader.take(1)]
                np.testing.assert_array_equal(np.concatenate([second.take(3), second.take(4)]), b)
            assert all(r.flags.aligned for r in rows)
            np.testing.assert_array_equal(np.concatenate(rows), a)
            mapped += all(not r.flags.owndata for r in rows)
        assert (mapped >= 1) if save is np.savez else (mapped == 0), (save.__name__, mapped)


def test_a_truncated_member_is_one_data_error(tmp_path, cnn):
    a = RNG.standard_normal((6, 3, 4, 4)).astype(np.float32)
    header = (tmp_path / "h.npy")
    np.save(header, a)
    with zipfile.ZipFile(tmp_path / "t.npz", "w") as zf:  # the member's header says 6 rows; 2 are there
        zf.writestr("x.npy", header.read_bytes()[:-4 * 48 * 4])
    src = open_data(tmp_path / "t.npz", cnn)
    assert src.num_samples() == 6
    assert len(list(src.samples(2))) == 2  # rows that exist are read
    with pytest.raises(DataError, match=r"t\.npz: .*'x'.*truncated"):
        list(src.samples())
