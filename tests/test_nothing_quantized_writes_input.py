"""A quantize that quantizes nothing writes the input model as given, and ``evaluate`` of two files runs each as written.

When the latency check left every unit of ppocr_mobile_v2_cls float, ``quantize`` said "the model written is the
float model" and "the written model computes in float like the input", but wrote the prepared float graph
(Constants lifted, 35 BatchNormalization folded into their Convs, opset 11 -> 13): ``evaluate WRITTEN INPUT`` read
132.84 dB, not inf, and ``compare`` listed the folded nodes as removed. The export now writes the input file as
given (:func:`workbench.core.pipeline.export.float_as_given`): the same graph, opset and ir_version, with the
writer's ``workbench.*`` metadata added (``cost`` and ``convert`` tell from it that quantize wrote the file). ``evaluate FLOAT QUANTIZED`` ran FLOAT's
prepared graph against QUANTIZED as written, so even ``evaluate model.onnx model.onnx`` read 132.84 dB under a
warning saying "(SQNR inf)"; the float file now runs as written too. The latency measurement is replaced by a ratio
keyed by whether the measured model holds Q/DQ (no timing in the test).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import onnx
import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.pipeline import latency_check
from workbench.core.runtime.latency import LatencyComparison

QDQ = ("QuantizeLinear", "DequantizeLinear")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _is_the_input(written: onnx.ModelProto, path: Path) -> None:
    """``written`` is the file at ``path`` as given, plus the writer's workbench.* metadata (the recipe)."""
    given = onnx.load(str(path))
    assert written.graph == given.graph
    assert (written.opset_import, written.ir_version, written.producer_name) == \
        (given.opset_import, given.ir_version, given.producer_name)
    assert sum(n.op_type == "BatchNormalization" for n in written.graph.node) == 35
    stamps = [p.key for p in written.metadata_props]
    assert stamps == [p.key for p in given.metadata_props] + ["workbench.version", "workbench.mode",
                                                             "workbench.recipe", "workbench.issues"]


@pytest.fixture
def cls(corpus) -> Path:
    return corpus / "ppocr_mobile_v2_cls"


def _slower_quantized(monkeypatch) -> None:
    """Any model with Q/DQ measures 1.37x float at 14 us a run (a microsecond slowdown: every island left float
    at once), a float one 1.00x."""
    def compare(float_model, quant_model, feed, **_):
        ratio = 1.37 if any(n.op_type in QDQ for n in quant_model.graph.node) else 1.0
        return LatencyComparison(14e-6, 14e-6 * ratio, 9, 14e-6, 14e-6 * ratio)

    monkeypatch.setattr(latency_check, "compare", compare)


def _sqnr_line(capsys, argv: list[str]) -> list[str]:
    """The figures of ``evaluate`` (``argv``): the SQNR column of its one output's row."""
    assert main(argv) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith("save_infer_model/scale_0.tmp_1 ")]
    return rows[0][1:3]


def test_every_unit_left_float_writes_the_input_file(cls, tmp_path, monkeypatch, capsys):
    _slower_quantized(monkeypatch)
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(cls / "model.onnx"), "--data", str(cls / "calib.npz"), "--samples", "8",
                 "--no-auto", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out} (0 of 135 node units quantized" in captured.out
    assert "the model written is the float model" in captured.err
    assert "so the written model computes in float like the input" in captured.err
    _is_the_input(onnx.load(str(out)), cls / "model.onnx")
    # evaluate, either way round: the same model, so no error at all
    data = ["--data", str(cls / "eval.npz"), "--samples", "4"]
    assert _sqnr_line(capsys, ["evaluate", str(cls / "model.onnx"), str(out), *data]) == ["inf", "1.00000"]
    assert _sqnr_line(capsys, ["evaluate", str(out), str(cls / "model.onnx"), *data]) == ["inf", "1.00000"]


def test_export_of_a_result_quantizing_nothing_holds_the_input_and_of_one_quantizing_the_result(cls, tmp_path):
    model = api.open_model(cls / "model.onnx")
    recipe = api.make_recipe("cpu-u8s8")
    nothing = api.quantize(model, recipe.with_excluded(list(api.plan(model, recipe).units)),
                           data=str(cls / "calib.npz"), samples=4)
    assert not any(n.op_type in QDQ for n in nothing.proto.graph.node)
    assert sum(n.op_type == "BatchNormalization" for n in nothing.proto.graph.node) == 0  # the prepared graph
    out = api.export(nothing, tmp_path / "float.onnx")
    _is_the_input(onnx.load(str(out)), cls / "model.onnx")
    # the app's calibration keeps the bytes an export of the same inputs writes
    kept = api.keep_written(model, nothing, {}, [])
    assert hashlib.sha256(kept["model"]).hexdigest() == _sha(out)
    # a result that quantizes something is written as it is
    some = api.quantize(model, recipe, data=str(cls / "calib.npz"), samples=4)
    written = onnx.load(str(api.export(some, tmp_path / "q.onnx")))
    assert written.graph == some.proto.graph


def test_evaluate_of_a_float_file_against_itself_reads_inf(cls, capsys):
    data = ["--data", str(cls / "eval.npz"), "--samples", "4"]
    assert _sqnr_line(capsys, ["evaluate", str(cls / "model.onnx"), str(cls / "model.onnx"), *data]) == \
        ["inf", "1.00000"]
