"""`workbench-cli quantize` on digits_transformer (a16w8) prints one account of the latency check's outcome, and
the file written is what it says: each outcome with fixed fake measurements (conftest's fake clock, no timing).
Before, a placement with islands left float that still measured slower than float printed its check's "written as
the recipe asks" beside the islands "kept float" (1.63x as planned, 1.33x with 2 of 5 islands float, 36 us a run)."""

from __future__ import annotations

import onnx
import pytest

from workbench.cli import main

#: digits_transformer's float run on this machine, 1 thread (0.107-0.2 ms measured)
FLOAT_S = 0.107e-3
REMEASURE = "--remeasure-latency (WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again"


def _count(proto: onnx.ModelProto, op: str) -> int:
    return sum(n.op_type == op for n in proto.graph.node)


def _script(planned: float, partial: float, float_s: float = FLOAT_S):
    """Runs of a model as planned (the first quantized one measured) take ``planned`` x ``float_s``, of one with
    fewer QuantizeLinear nodes (islands left float) ``partial`` x, of one without any (and of a unit probe)
    ``float_s``: the probes keep no unit float."""
    first: list[int] = []

    def runs(model):
        proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
        q = _count(proto, "QuantizeLinear")
        if proto.graph.name == "probe" or not q:
            ratio = 1.0
        else:
            first.append(q) if not first else None
            ratio = planned if q >= first[0] else partial
        ns = round(float_s * ratio * 1e9)
        return lambda k: (ns, ns)

    return runs


@pytest.fixture
def quantize(corpus, tmp_path, capsys, monkeypatch):
    """``quantize(name, *extra) -> (written model, stdout, warning lines)``: the CLI on digits_transformer with its
    calib.npz, each run with a latency cache of its own (no figure reused from the run before)."""
    folder = corpus / "digits_transformer"

    def run(name: str, *extra: str):
        out = tmp_path / name
        monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / f"cache-{name}"))
        capsys.readouterr()
        assert main(["quantize", str(folder / "model_opset17.onnx"), "--preset", "a16w8", "--data",
                     str(folder / "calib.npz"), "-o", str(out), *extra]) == 0
        printed, err = capsys.readouterr()
        return onnx.load(out), printed, [line for line in err.splitlines() if line.startswith("warning: ")]

    return run


def _reads_dq(proto: onnx.ModelProto, node: str) -> bool:
    """True when ``node`` of ``proto`` reads an input out of a DequantizeLinear (it runs quantized)."""
    dq = {o for n in proto.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return any(i in dq for n in proto.graph.node if n.name == node for i in n.input)


def test_each_latency_outcome_prints_what_the_file_is(quantize, fake_latency):
    planned, printed, warnings = quantize("planned.onnx", "--no-latency-check")
    assert "(36 of 36 node units quantized" in printed and warnings == []
    quantized = _count(planned, "QuantizeLinear")
    assert quantized > 0 and _reads_dq(planned, "/cls/Gemm")

    # faster than float: written as planned, nothing to warn about
    fake_latency.script = _script(0.5, 0.5)
    model, printed, warnings = quantize("faster.onnx")
    assert "(36 of 36 node units quantized" in printed and warnings == []
    assert _count(model, "QuantizeLinear") == quantized

    # 1.63x as planned (67 us a run: islands tried), 1.33x with the smallest island (/cls/Gemm) float, 35 us a run:
    # too little to try more; one warning on the island, one on the model written (not "written as the recipe asks")
    fake_latency.script = _script(1.63, 1.33)
    model, printed, warnings = quantize("partial.onnx")
    assert "(35 of 36 node units quantized" in printed
    assert warnings == [
        "warning: /cls/Gemm: kept float with its island of 1 node unit (/cls/Gemm): a quantized node unit between float nodes; as quantized the model "
        "measured 1.63x its float latency, with 1 island left float 1.33x (onnxruntime CPU, 1 thread); name a node "
        "in an override, or pass --no-latency-check, to quantize it anyway",
        "warning: still slower than float: with 1 island left float (35 of 36 node units quantized) the model "
        "written measured 1.33x the float model's latency (1.63x as planned); 35 us slower per run of 0.107 ms, too "
        "little for leaving further islands float to win back; keep the float model for speed, exclude more nodes "
        "(--exclude, or the app's Inspector), or pass --no-latency-check to write every unit the recipe asks "
        f"quantized; {REMEASURE}"]
    assert not _reads_dq(model, "/cls/Gemm") and 0 < _count(model, "QuantizeLinear") < quantized
    assert _reads_dq(model, "/embed/MatMul")

    # 1.20x as planned, 21 us a run: every unit float at once, the float model written
    fake_latency.script = _script(1.2, 1.2)
    model, printed, warnings = quantize("micro.onnx")
    assert "(0 of 36 node units quantized" in printed and _count(model, "QuantizeLinear") == 0
    assert warnings == [
        "warning: quantization does not pay at this size: as quantized the model measured 1.20x its float latency "
        "(21 us slower per run of 0.107 ms: the Q/DQ transitions cost more than the integer kernels save), so every "
        "unit is left float and the model written is the float model; --no-latency-check writes it quantized, "
        f"{REMEASURE}",
        "warning: no node unit is quantized: all 36 were kept float (the reasons are above), so the written model "
        "computes in float like the input; --no-latency-check writes the units the latency check kept float "
        "quantized"]
