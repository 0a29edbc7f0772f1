"""Untrusted files: external data that escapes the model folder, and project files that would run code.

``tests/test_model.py`` already covers ``../``, absolute and symlinked locations of main-graph
initializers; here: the same escapes from a subgraph tensor and a Constant attribute, a sibling
folder whose name merely starts with the model folder's name, a symlinked folder, and the rule
that a project's Python data reader runs only when the project itself sets ``allow_code``.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import save_matmul_model

from workbench.core import api
from workbench.core.errors import DataError, ModelError, WorkbenchError
from workbench.core.pipeline.project import load_project, new_project, save_project

RNG = np.random.default_rng(3)


def _if_model() -> onnx.ModelProto:
    """cond ? X @ Wt : X @ We, with Wt / We initializers of the branches."""
    def branch(tag):
        w = numpy_helper.from_array(RNG.standard_normal((4, 3)).astype(np.float32), f"W{tag}")
        return helper.make_graph([helper.make_node("MatMul", ["X", f"W{tag}"], [f"Y{tag}"], name=f"mm{tag}")],
                                 tag, [], [helper.make_tensor_value_info(f"Y{tag}", TensorProto.FLOAT, [2, 3])], [w])
    node = helper.make_node("If", ["c"], ["Y"], name="if", then_branch=branch("t"), else_branch=branch("e"))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                        helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _constant_model() -> onnx.ModelProto:
    value = numpy_helper.from_array(RNG.standard_normal((4, 3)).astype(np.float32), "Wc")
    nodes = [helper.make_node("Constant", [], ["W"], name="const", value=value),
             helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _externalize(m: onnx.ModelProto, folder, location: str, payload_dir) -> None:
    """Store every tensor of ``m`` (subgraphs and attributes too) in ``payload_dir/data.bin`` and
    point their ``location`` at ``location``; save the model as ``folder/m.onnx``."""
    from onnx import external_data_helper as edh

    blob = bytearray()
    for t in edh._get_all_tensors(m):
        if not t.HasField("raw_data"):
            continue
        offset, raw = len(blob), t.raw_data
        blob += raw
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(len(raw)))):
            t.external_data.add(key=k, value=v)
    payload_dir.mkdir(parents=True, exist_ok=True)
    (payload_dir / "data.bin").write_bytes(bytes(blob))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "m.onnx").write_bytes(m.SerializeToString())


@pytest.mark.parametrize("build", [_if_model, _constant_model], ids=["subgraph-initializer", "constant-attribute"])
@pytest.mark.parametrize("how", ["dotdot", "absolute", "sibling-prefix", "symlinked-folder"])
def test_external_data_of_any_tensor_outside_the_folder_is_refused(tmp_path, build, how):
    folder = tmp_path / "model"
    outside = tmp_path / ("model2" if how == "sibling-prefix" else "outside")
    location = {"dotdot": f"../{outside.name}/data.bin", "absolute": str(outside / "data.bin"),
                "sibling-prefix": "../model2/data.bin", "symlinked-folder": "link/data.bin"}[how]
    _externalize(build(), folder, location, outside)
    if how == "symlinked-folder":
        (folder / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ModelError, match=r"m\.onnx: tensor 'W[cte]'.*(outside the model's folder|absolute path)"):
        api.open_model(folder / "m.onnx")


@pytest.mark.parametrize("build", [_if_model, _constant_model], ids=["subgraph-initializer", "constant-attribute"])
def test_external_data_of_subgraph_and_constant_inside_the_folder_loads(tmp_path, build):
    """The control: the same layout with the data beside the model loads with the right values."""
    m = build()
    want = {t.name: numpy_helper.to_array(t) for t in onnx.external_data_helper._get_all_tensors(m)}
    _externalize(m, tmp_path / "model", "sub/data.bin", tmp_path / "model" / "sub")
    model = api.open_model(tmp_path / "model" / "m.onnx")
    assert model.external_data_files == ["sub/data.bin"]
    for name, value in want.items():
        lifted = {"Wc": "W"}.get(name, name)  # the Constant becomes the initializer named by its output
        np.testing.assert_array_equal(model.initializer(lifted), value)


# -- project files never run code unless allowed ----------------------------------------------

@pytest.fixture
def evil_project(tmp_path):
    """A project whose data source is a Python reader that writes a marker file when imported."""
    model = save_matmul_model(tmp_path / "m.onnx", RNG)
    marker = tmp_path / "reader-ran"
    reader = tmp_path / "reader.py"
    reader.write_text("import numpy as np, pathlib\n"
                      f"pathlib.Path({str(marker)!r}).write_text('ran')\n"
                      "def samples():\n"
                      "    for i in range(3):\n"
                      "        yield {'X': np.full((1, 4), i, np.float32)}\n")
    proj = new_project(model, api.make_recipe("cpu-u8s8"))
    proj.data = {"kind": "python", "path": str(reader), "allow_code": True}
    path = save_project(proj, tmp_path / "p.wbproj")
    return path, marker


def _set(path, **fields):
    doc = json.loads(path.read_text())
    for key, value in fields.items():
        if key == "data":
            doc["data"] = value
        else:
            doc[key] = value
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("data", [
    {"kind": "python", "path": "reader.py", "allow_code": True},
    {"path": "reader.py", "allow_code": True},  # kind inferred from the suffix
    {"kind": "python", "path": "reader.py"},
], ids=["explicit", "inferred-kind", "no-flag"])
def test_project_without_allow_code_never_runs_its_python_reader(evil_project, data):
    path, marker = evil_project
    _set(path, allow_code=False, data=data)
    assert load_project(path).allow_code is False
    with pytest.raises(DataError, match=r"reader\.py: a Python data reader runs code.*allow_code"):
        api.replay_project(path)
    assert not marker.exists()


def test_project_without_allow_code_field_defaults_to_no_code(evil_project):
    path, marker = evil_project
    doc = json.loads(path.read_text())
    doc.pop("allow_code", None)
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="allow_code"):
        api.replay_project(path)
    assert not marker.exists()


def test_cli_replay_of_a_project_without_allow_code_exits_2_and_runs_nothing(evil_project, capsys):
    from workbench.cli import main

    path, marker = evil_project
    _set(path, allow_code=False)
    assert main(["quantize", str(path), "-o", str(path.parent / "out.onnx")]) == 2
    assert "allow_code" in capsys.readouterr().err
    assert not marker.exists() and not (path.parent / "out.onnx").exists()


def test_project_with_allow_code_runs_the_reader(evil_project):
    """The control: with allow_code the reader is imported and its samples calibrate the model."""
    path, marker = evil_project
    _set(path, allow_code=True)
    _, result = api.replay_project(path)
    assert marker.read_text() == "ran"
    assert result.calibration.samples_seen == 3
    assert sum(n.op_type == "QuantizeLinear" for n in result.proto.graph.node) >= 1
    sys.modules.pop("reader", None)


def test_project_file_is_json_only(tmp_path):
    """A pickle (or any non-JSON bytes) named .wbproj is refused as invalid JSON, never unpickled."""
    import pickle

    marker = tmp_path / "unpickled"

    class Evil:
        def __reduce__(self):
            return (marker.touch, ())

    path = tmp_path / "p.wbproj"
    path.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(WorkbenchError, match=r"p\.wbproj: not a Workbench project"):
        load_project(path)
    assert not marker.exists()
