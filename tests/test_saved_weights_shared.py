"""A float weight the writer leaves unquantized is copied out of the float model once per quantize: the written
model's copy (io.tensor_bytes.restore_held) hands out the bytes the job read (raw_bytes_kept), and the saver
(io.model_pieces.split_model) reads neither the copy's raw_data nor, through ListFields, any large raw_data.
minilm_l6_v2's 47 MB word embedding was copied twice more after calibration (26k page faults).

Copies are counted with tracemalloc (each upb read of a bytes field is a new Python bytes object): exact
allocations, no timing."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.io import tensor_bytes
from workbench.core.io.model_pieces import split_model
from workbench.core.io.tensor_bytes import lean_copy, raw_bytes, raw_bytes_kept, restore_held
from workbench.core.pipeline import export

TABLE = (4096, 512)  # float32: 8 MiB, above LEAN_BYTES and PIECE_BYTES
TABLE_BYTES = TABLE[0] * TABLE[1] * 4


def _embedding_model(folder) -> tuple[str, str]:
    """A Gather over an 8 MiB float table (kept float by the preset) feeding a MatMul; its model and data paths."""
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal(TABLE).astype(np.float32), "table")
    w = numpy_helper.from_array(rng.standard_normal((TABLE[1], 64)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["e"], name="gather"),
                           helper.make_node("MatMul", ["e", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8, 64])], [table, w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, folder / "emb.onnx")
    np.savez(folder / "ids.npz", ids=rng.integers(0, TABLE[0], (16, 8)))
    return str(folder / "emb.onnx"), str(folder / "ids.npz")


def _peak(fn) -> int:
    """Bytes allocated at the peak of ``fn()`` above what was allocated when it started."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_a_restored_copy_hands_out_the_bytes_its_scope_read_until_the_scope_ends(tmp_path):
    proto = onnx.load(_embedding_model(tmp_path)[0])
    source = proto.graph.initializer[0]
    with raw_bytes_kept(proto):
        lean, held = lean_copy(proto)
        restore_held(lean, held)  # the table not read yet: nothing to share
        assert raw_bytes(lean.graph.initializer[-1]) is not raw_bytes(lean.graph.initializer[-1])
        read = raw_bytes(source)
        lean, held = lean_copy(proto)
        restore_held(lean, held)
        copy = lean.graph.initializer[-1]
        assert copy.name == "table" and copy.raw_data == read
        assert raw_bytes(copy) is read
        assert b"".join(split_model(lean).parts) == lean.SerializeToString()
    assert id(copy) not in tensor_bytes._KEPT and id(source) not in tensor_bytes._KEPT
    assert raw_bytes(copy) is not raw_bytes(copy) and raw_bytes(copy) == read


def test_split_model_reads_no_large_raw_data_it_is_handed_and_copies_one_it_is_not(tmp_path):
    proto = onnx.load(_embedding_model(tmp_path)[0])
    whole = proto.SerializeToString()
    with raw_bytes_kept(proto):
        raw_bytes(proto.graph.initializer[0])
        lean, held = lean_copy(proto)
        restore_held(lean, held)
        pieces = []
        assert _peak(lambda: pieces.append(split_model(lean))) < TABLE_BYTES // 8  # was 8.5 MB: read by ListFields, then for its piece
    assert b"".join(pieces[0].parts) == lean.SerializeToString()
    pieces.clear()
    assert _peak(lambda: pieces.append(split_model(proto))) < TABLE_BYTES * 3 // 2  # its raw_data, one copy at a time
    assert b"".join(pieces[0].parts) == whole


def test_the_cli_saves_the_kept_float_table_without_copying_it(tmp_path, monkeypatch):
    path, data = _embedding_model(tmp_path)
    peaks = []
    save = export.save_model

    def measured(proto, target, **kw):
        kept = [t for t in proto.graph.initializer if t.name == "table"]
        assert len(kept) == 1 and kept[0].data_type == TensorProto.FLOAT  # the table really is written float
        peaks.append(_peak(lambda: save(proto, target, **kw)))

    monkeypatch.setattr(export, "save_model", measured)
    out = tmp_path / "q.onnx"
    assert main(["quantize", path, "--data", data, "-o", str(out), "--no-auto", "--no-latency-check"]) == 0
    assert len(peaks) == 1 and peaks[0] < TABLE_BYTES // 8  # was 8.5 MB: the table copied out of the written model
    monkeypatch.setattr(export, "save_model", save)
    model = api.open_model(path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, check=False)  # no scope: copied
    api.export(result, tmp_path / "again.onnx")
    assert out.read_bytes() == (tmp_path / "again.onnx").read_bytes() == result.proto.SerializeToString()
