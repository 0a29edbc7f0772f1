"""The refusal of a model that is already quantized, naming its format as ``inspect``'s summary does.

The format comes from :func:`~workbench.core.inspection.quant_summary.summarize_quantization` (one definition):
onnxruntime's QOperator export of digits_cnn is ``QOperator`` (its integer kernels, with the QuantizeLinear at its
input and the DequantizeLinear at its output counted with them, :mod:`.qoperator_boundary`), not ``QDQ/QOperator``;
a MatMulNBits onnxruntime runs in int8 is ``dynamic``. The hint says what each format is and what to do.
"""

from __future__ import annotations

import importlib
from collections import Counter
from typing import NamedTuple

from workbench.core.errors import AlreadyQuantizedError
from workbench.core.model.load import PreparedModel
from workbench.core.wording import count

#: format -> what a file of it holds (the first words of the hint)
_WHAT = {
    "QDQ": "QuantizeLinear / DequantizeLinear pairs around float ops (QDQ: onnxruntime fuses each pair and its op "
           "into an integer kernel as it loads the file)",
    "QOperator": "integer kernels (QLinearConv, QGemm, QLinearMatMul ...) passing integer tensors to each other "
                 "(QOperator: onnxruntime runs them as they are)",
    "dynamic": "kernels that quantize their float inputs as they run (dynamic: DynamicQuantizeLinear, ConvInteger, "
               "MatMulInteger, MatMulNBits at accuracy_level 4 and the DequantizeLinear weight + MatMul units onnxruntime "
               "fuses into it ...)",
    "weight_only": "integer weights dequantized to float as it runs (weight-only: MatMulNBits, GatherBlockQuantized "
                   "...)",
    "QONNX": "QONNX Quant nodes (onnxruntime cannot run it; workbench-cli convert FILE OUT.onnx --to qdq writes a "
             "QDQ file)",
}


class QuantizedFile(NamedTuple):
    """How a refusal names an already-quantized model (:func:`describe_quantized`)."""

    formats: str  # its formats as ``inspect``'s summary names them, joined by "/": "QDQ", "QOperator", "QDQ/dynamic"
    nodes: str  # "22 quantized nodes (QuantizeLinear x11, DequantizeLinear x11)"
    held: str  # what a file of those formats holds: "It holds QuantizeLinear / DequantizeLinear pairs ... ."


def describe_quantized(model: PreparedModel) -> QuantizedFile:
    """The formats, quantized nodes (count and op types, most frequent first) and what the file holds of ``model``,
    for the refusals of :func:`ensure_float_model` and the CLI's measuring commands (one wording). ``model`` holds
    quantized operators (``model.quantized`` not empty)."""
    ops = Counter(q.op_type if q.domain in ("", "ai.onnx") else f"{q.domain}::{q.op_type}" for q in model.quantized)
    # loaded here: every quantize runs ensure_float_model, whose float models never need the summary (it, its
    # readers of Q/DQ and QONNX parameters, graph.layout: 9 modules a plain quantize does not load)
    summary = importlib.import_module("workbench.core.inspection.quant_summary")
    formats = sorted(summary.summarize_quantization(model.proto).kinds)
    listed = ", ".join(f"{op} x{n}" for op, n in ops.most_common())
    held = "; ".join(_WHAT.get(f, f) for f in formats)
    return QuantizedFile("/".join(formats), f"{count(len(model.quantized), 'quantized node')} ({listed})",
                         f"It holds {held}.")


def ensure_float_model(model: PreparedModel) -> None:
    """Refuse to quantize a model that already contains quantized operators.

    Raises
    ------
    AlreadyQuantizedError
        ``model.quantized`` is not empty. The message names the file's formats as ``inspect`` does
        (``QuantSummary.kinds``: ``QOperator`` for QLinearConv etc. with their boundary QuantizeLinear /
        DequantizeLinear, ``QDQ`` for Q/DQ pairs; two formats joined by ``/``), the count and op types; the hint what
        each format holds and what to do.
    """
    if not model.quantized:
        return
    described = describe_quantized(model)
    raise AlreadyQuantizedError(
        f"{model.name} is already quantized ({described.formats}): {described.nodes}; quantizing it again would "
        "stack a second rounding on the first.", hint=_hint(model.name, described))


def _hint(name: str, described: QuantizedFile) -> str:
    """What the file holds (one clause per format) and what to do: quantize its float model; inspect or compare this
    file as it is."""
    compare = "" if "QONNX" in described.formats.split("/") else (
        f"; its error against the float model: workbench-cli compare FLOAT.onnx {name} --data calib.npz")
    return (f"{described.held} Quantize the float model instead (the one this model was made from); to see this "
            f"file's scales and zero points: workbench-cli inspect {name}{compare}.")
