"""The atomic writer never replaces a node that is not a regular file: it wrote a temporary file and
renamed it over the path, so an output path naming a FIFO, a folder or a device (as root, /dev/null)
became a regular file, whoever called it (the app, the core's project and report writers)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from workbench.core.errors import ExportError
from workbench.core.io.atomic import atomic_write_bytes


def test_a_fifo_is_refused_and_left_as_it_was(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ExportError, match=r"pipe: is a FIFO, not a regular file"):
        atomic_write_bytes(fifo, b"model bytes")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no temporary file left either


def test_a_folder_is_refused(tmp_path):
    folder = tmp_path / "out.onnx"
    folder.mkdir()
    with pytest.raises(ExportError, match=r"out.onnx: is a folder, not a regular file"):
        atomic_write_bytes(folder, b"x")
    assert folder.is_dir() and not any(folder.iterdir())


def test_a_link_to_a_regular_file_is_written_through_the_rename_and_a_plain_file_replaced(tmp_path):
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")
    atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    atomic_write_bytes(link, b"newer")  # the rename replaces the link with a file; the target keeps its bytes
    assert link.read_bytes() == b"newer"


@pytest.mark.parametrize("external", [False, True])
def test_save_model_refuses_a_fifo_and_leaves_it(tmp_path, external):
    """save_model (the export of the app and the core) renamed its temporary file over a FIFO (as root, over
    /dev/null too) without the check the atomic writer makes; with external data, over a FIFO named as the
    data file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from workbench.core.io.save import save_model

    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fifo = tmp_path / ("m.onnx.data" if external else "m.onnx")
    os.mkfifo(fifo)
    with pytest.raises(ExportError, match=rf"{fifo.name}: is a FIFO, not a regular file"):
        save_model(proto, tmp_path / "m.onnx", external=external)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]
    save_model(proto, tmp_path / "n.onnx", external=external)  # a regular path is written as before
    assert onnx.load(str(tmp_path / "n.onnx")).graph.node[0].op_type == "MatMul"
