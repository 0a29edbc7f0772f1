"""A QONNX export of a result that quantizes nothing writes the input model as given, as the QDQ export does.

The QDQ export of such a result writes the input file re-read as given (db2c4ec), but ``--format qonnx`` wrote the
prepared float graph: ppocr_mobile_v2_cls with every unit excluded came out with its 35 BatchNormalization folded
into the Convs and opset 13 for the file's 11, under the warning "the written model computes in float like the
input". It now writes the QDQ export's bytes (the input file plus the writer's ``workbench.*`` metadata); where the
QONNX export fixes the input shapes (a symbolic batch set to 1, ``--input-shape``), only that step rewrites it
(inputs fixed, fixed-value nodes folded, ``value_info``: qonnx's executor needs every tensor's shape), and the CLI
says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from workbench.cli import main
from workbench.core import api

STAMPS = ["workbench.version", "workbench.mode", "workbench.recipe", "workbench.issues"]


def _unstamped(path: Path) -> bytes:
    """The file at ``path`` without the writer's workbench.* metadata, serialised again."""
    proto = onnx.load(str(path))
    assert [p.key for p in proto.metadata_props if p.key.startswith("workbench.")] == STAMPS
    keep = [p for p in proto.metadata_props if not p.key.startswith("workbench.")]
    del proto.metadata_props[:]
    proto.metadata_props.extend(keep)
    return proto.SerializeToString()


def _quantize(model: Path, out: Path, fmt: str, capsys) -> str:
    """``quantize MODEL --exclude '*' --format FMT`` (no data needed: nothing to calibrate); its stderr."""
    assert main(["quantize", str(model), "--exclude", "*", "--no-latency-check", "--no-auto", "--format", fmt,
                 "-o", str(out)]) == 0
    return capsys.readouterr().err


@pytest.mark.parametrize("name", ["01_shared_bias_valueinfo_name", "24_empty_and_duplicate_node_names"])
def test_qonnx_of_a_case_quantizing_nothing_is_the_qdq_file(cases, tmp_path, capsys, name):
    given = cases / f"{name}.onnx"
    _quantize(given, tmp_path / "qdq.onnx", "qdq", capsys)
    err = _quantize(given, tmp_path / "qonnx.onnx", "qonnx", capsys)
    assert (tmp_path / "qonnx.onnx").read_bytes() == (tmp_path / "qdq.onnx").read_bytes()
    assert "note: the QONNX file is the input model" not in err  # static inputs: no shape to fix
    if name.startswith("01"):  # case 24's nodes carry the names opening gave them (dup_0, dup_1)
        assert _unstamped(tmp_path / "qonnx.onnx") == given.read_bytes()


def test_qonnx_of_ppocr_cls_quantizing_nothing_keeps_its_batchnorms_and_opset(corpus, tmp_path, capsys):
    given = corpus / "ppocr_mobile_v2_cls" / "model.onnx"
    _quantize(given, tmp_path / "qdq.onnx", "qdq", capsys)
    err = _quantize(given, tmp_path / "qonnx.onnx", "qonnx", capsys)
    # x [-1, 3, ?, ?]: symbolic height and width, so no static shapes (the note says why), the file as given
    assert "QONNX written with symbolic input shapes" in err
    assert (tmp_path / "qonnx.onnx").read_bytes() == (tmp_path / "qdq.onnx").read_bytes()
    assert _unstamped(tmp_path / "qonnx.onnx") == given.read_bytes()
    written = onnx.load(str(tmp_path / "qonnx.onnx"))
    assert sum(n.op_type == "BatchNormalization" for n in written.graph.node) == 35  # 0 before: the prepared graph
    assert written.opset_import[0].version == 11  # 13 before


def test_qonnx_of_a_symbolic_batch_fixes_only_the_shapes(corpus, tmp_path, capsys):
    folder = corpus / "digits_transformer"
    given = onnx.load(str(folder / "model_opset17.onnx"))
    err = _quantize(folder / "model_opset17.onnx", tmp_path / "qonnx.onnx", "qonnx", capsys)
    assert "note: the QONNX file is the input model with its input shapes fixed (input 1x8x8)" in err
    written = onnx.load(str(tmp_path / "qonnx.onnx"))
    assert [d.dim_value for d in written.graph.input[0].type.tensor_type.shape.dim] == [1, 8, 8]
    assert written.opset_import == given.opset_import and written.ir_version == given.ir_version
    # the shape arithmetic folded (333 -> 92 nodes), every other node as given, in order, with its name
    kept = [n for n in given.graph.node if n.name in {w.name for w in written.graph.node}]
    assert list(written.graph.node) == kept and len(kept) == 92
    x = np.load(folder / "calib.npz")["input"][:1]
    want = ReferenceEvaluator(given).run(None, {"input": x})
    got = ReferenceEvaluator(written).run(None, {"input": x})
    assert all(np.array_equal(w, g) for w, g in zip(want, got, strict=True))


def test_api_export_qonnx_of_a_result_quantizing_nothing_writes_the_file_as_given(cases, tmp_path):
    given = cases / "01_shared_bias_valueinfo_name.onnx"
    model = api.open_model(given)
    recipe = api.make_recipe("cpu-u8s8")
    nothing = api.quantize(model, recipe.with_excluded(list(api.plan(model, recipe).units)))
    out = api.export(nothing, tmp_path / "q.onnx", format="qonnx", model=model, static_shapes=True)
    assert _unstamped(out) == given.read_bytes()
