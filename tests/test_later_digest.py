"""A model opened with ``hash_now=False`` hashes its file only when ``sha256`` is first read: the same digest as
hashlib's of the bytes read, and "" (never another file's digest) when the file was changed, replaced or
removed in between."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.io.later_digest import DigestField, LaterDigest
from workbench.core.model import reader
from workbench.core.model.load import PreparedModel, load_model


def _model_file(path, side: int, seed: int = 0):
    """A MatMul model whose weight is side x side float32 (side 600: a 1.4 MiB file, memory-mapped when read)."""
    w = np.random.default_rng(seed).standard_normal((side, side)).astype(np.float32)
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, side])],
                              [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_hashed_on_first_read_with_the_digest_of_the_file(tmp_path):
    path = _model_file(tmp_path / "m.onnx", 600)
    assert path.stat().st_size > 1 << 20
    model = api.open_model(path, hash_now=False)
    assert DigestField.pending(model, "sha256")  # nothing hashed yet
    assert model.sha256 == _sha(path)
    assert not DigestField.pending(model, "sha256")  # hashed once, kept
    assert load_model(path).sha256 == model.sha256  # the default hashes at once, the same digest
    assert not DigestField.pending(load_model(path), "sha256")


def test_copies_and_pickles_keep_the_digest(tmp_path):
    path = _model_file(tmp_path / "m.onnx", 600)
    model = load_model(path, hash_now=False)
    assert pickle.loads(pickle.dumps(model)).sha256 == _sha(path)
    assert dataclasses.replace(load_model(path, hash_now=False), notes=[]).sha256 == _sha(path)


def test_a_file_rewritten_in_place_gives_no_digest(tmp_path):
    path = _model_file(tmp_path / "m.onnx", 600)
    model = load_model(path, hash_now=False)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1  # same size, other bytes
    path.write_bytes(bytes(data))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a new mtime even on a coarse clock
    assert model.sha256 == ""


def test_a_file_replaced_or_removed_gives_no_digest(tmp_path):
    path = _model_file(tmp_path / "m.onnx", 600)
    replaced = load_model(path, hash_now=False)
    removed = load_model(path, hash_now=False)
    other = _model_file(tmp_path / "other.onnx", 600, seed=1)
    os.replace(other, path)  # another inode under the same name
    assert replaced.sha256 == ""
    path.unlink()
    assert removed.sha256 == ""


def test_a_small_file_is_hashed_at_once(tmp_path):
    path = _model_file(tmp_path / "small.onnx", 16)  # under 1 MiB: read into memory, hashed there
    model = load_model(path, hash_now=False)
    assert not DigestField.pending(model, "sha256")
    assert model.sha256 == _sha(path)


def test_the_field_defaults_to_empty_and_takes_a_string():
    proto = helper.make_model(helper.make_graph([], "g", [], []))
    assert PreparedModel(proto).sha256 == ""
    assert PreparedModel(proto, sha256="ab" * 32).sha256 == "ab" * 32


def test_later_digest_of_an_empty_file(tmp_path):
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert LaterDigest(path, os.stat(path)).hexdigest() == hashlib.sha256(b"").hexdigest()


def test_quantize_without_the_recipe_choice_never_hashes_the_model(tmp_path, monkeypatch):
    from workbench.cli import main

    path = _model_file(tmp_path / "m.onnx", 600)
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(2).standard_normal((4, 1, 600)).astype(np.float32))
    hashed = []
    monkeypatch.setattr(reader, "_sha256", lambda data=b"", **kw: hashed.append(len(data)) or hashlib.sha256(data))
    monkeypatch.setattr(LaterDigest, "_compute", lambda self: hashed.append(self.path) or "")
    rc = main(["quantize", str(path), "--data", str(tmp_path / "calib.npz"), "--no-auto", "--no-latency-check",
               "-o", str(tmp_path / "q.onnx")])
    assert rc == 0 and (tmp_path / "q.onnx").is_file()
    assert hashed == []
