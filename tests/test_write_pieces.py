"""Large files are written in WRITE_PIECE-byte calls (a single write of tens of MB cost the kernel
0.15-0.65 s of system CPU on the benchmark machine, the same bytes in 64 KiB calls 0.02 s), with the
bytes a single write gives."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.io import atomic, save
from workbench.core.io.atomic import WRITE_PIECE, atomic_write_bytes, write_pieces


class Recorder(io.BytesIO):
    """A binary file that records the size of every write call."""

    def __init__(self):
        super().__init__()
        self.sizes: list[int] = []

    def write(self, b) -> int:
        self.sizes.append(len(b))
        return super().write(b)


def _recording_open(calls: list[Recorder]):
    real = open

    class File:
        def __init__(self, path, mode):
            self.f = real(path, mode)
            self.rec = Recorder()
            calls.append(self.rec)

        def write(self, b):
            self.rec.write(b)
            return self.f.write(b)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    return lambda path, mode="r", *a, **k: File(path, mode) if "w" in mode else real(path, mode, *a, **k)


def test_write_pieces_writes_the_same_bytes_in_pieces():
    data = np.random.default_rng(0).integers(0, 256, 3 * WRITE_PIECE + 123, dtype=np.uint8).tobytes()
    f = Recorder()
    write_pieces(f, data)
    assert f.getvalue() == data
    assert f.sizes == [WRITE_PIECE] * 3 + [123]
    f = Recorder()
    write_pieces(f, bytearray(b"abc"))
    assert f.getvalue() == b"abc" and f.sizes == [3]
    f = Recorder()
    write_pieces(f, b"")
    assert f.sizes == []


def _model(n: int) -> onnx.ModelProto:
    w = np.arange(n, dtype=np.float32).reshape(-1, 4) / n
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, w.shape[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_save_model_writes_a_large_model_in_pieces(tmp_path, monkeypatch):
    proto = _model(200_000)  # 800 KB of weights
    calls: list[Recorder] = []
    monkeypatch.setattr(save, "open", _recording_open(calls), raising=False)
    out = save.save_model(proto, tmp_path / "m.onnx")
    written = out.read_bytes()
    assert written == proto.SerializeToString()
    sizes = [s for c in calls for s in c.sizes]
    # the weight's bytes are a piece of their own (io.model_pieces), written in full WRITE_PIECE calls
    assert sum(sizes) == len(written) and max(sizes) == WRITE_PIECE and sizes.count(WRITE_PIECE) == 800_000 // WRITE_PIECE
    back = onnx.load(str(out))
    np.testing.assert_array_equal(numpy_helper.to_array(back.graph.initializer[0]),
                                  numpy_helper.to_array(proto.graph.initializer[0]))
    ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])  # a model onnxruntime loads


def test_atomic_write_bytes_writes_in_pieces(tmp_path, monkeypatch):
    data = bytes(range(256)) * (WRITE_PIECE // 128)  # two pieces
    calls: list[Recorder] = []
    monkeypatch.setattr(atomic, "open", _recording_open(calls), raising=False)
    atomic_write_bytes(tmp_path / "f.bin", data)
    assert (tmp_path / "f.bin").read_bytes() == data
    assert [s for c in calls for s in c.sizes] == [WRITE_PIECE, WRITE_PIECE]
