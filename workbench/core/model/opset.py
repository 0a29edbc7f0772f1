"""Default-domain opset of a model and upgrading it with ``onnx.version_converter``.

QuantizeLinear needs opset 10+, per-axis scales 13+, int16/uint16 and float8 19+/21+, int4 and
``block_size`` 21+ (ONNX operator spec, QuantizeLinear change log).
"""

from __future__ import annotations

import re

import onnx
from onnx import helper, version_converter

from workbench.core.errors import ModelError
from workbench.core.graph.walk import NameAllocator, all_names, iter_nodes
from workbench.core.model.shapes import restore_weights, skeleton

_DEFAULT = ("", "ai.onnx")
_OP_IN_MESSAGE = re.compile(r"\b(?:for|of)\s+([A-Za-z_]\w*)")


def default_opset(proto: onnx.ModelProto) -> int:
    """Version of the default ONNX domain in ``proto.opset_import`` (0 when absent)."""
    for o in proto.opset_import:
        if o.domain in _DEFAULT:
            return o.version
    return 0


def upgrade_opset(proto: onnx.ModelProto, target: int, *, source: str = "model") -> onnx.ModelProto:
    """Return ``proto`` converted to default-domain opset ``target`` (never downgrades).

    The converted model gets the lowest IR version that the new opset needs (if higher than
    its own), and nodes the converter added without a name get unique names.

    Parameters
    ----------
    proto : onnx.ModelProto
        Model to convert; not modified. Returned unchanged when its opset is already >= target.
    target : int
        Default-domain opset wanted (e.g. 13, 19, 21).
    source : str
        How to name the model in error messages (file name).

    Raises
    ------
    ModelError
        ``onnx.version_converter`` cannot convert some operator (the message names it) or drops
        the model-local functions.
    """
    current = default_opset(proto)
    if current >= target:
        return proto
    light, stripped = skeleton(proto)  # the converter serialises the model: leave big weights out
    try:
        out = restore_weights(version_converter.convert_version(light, target), stripped)
    except Exception as exc:  # noqa: BLE001 - the converter raises RuntimeError/ValueError/IndexError
        text = str(exc).strip().splitlines()[-1] if str(exc).strip() else exc.__class__.__name__
        op_name = _op_in_message(text, proto)
        op = f"operator '{op_name}'" if op_name else "an operator"
        nodes = [n.name or "<unnamed>" for _, n in iter_nodes(proto.graph) if n.op_type == op_name][:5]
        where = f" (nodes {', '.join(repr(n) for n in nodes)})" if nodes else ""
        raise ModelError(f"{source}: cannot convert from opset {current} to opset {target}: "
                         f"onnx.version_converter has no conversion for {op}{where} ({text}).",
                         hint=f"Re-export the model at opset {target} or higher, or pick a recipe "
                              f"that works at opset {current}.") from None
    kept = {(f.domain, f.name) for f in out.functions}
    lost = sorted(f"{f.domain}::{f.name}" for f in proto.functions if (f.domain, f.name) not in kept)
    if lost:  # the converter returns the model without them: its nodes would name no operator
        raise ModelError(f"{source}: cannot convert from opset {current} to opset {target}: "
                         f"onnx.version_converter drops the model-local functions {', '.join(lost[:5])}.",
                         hint=f"Inline the functions (onnx.inliner.inline_local_functions) or re-export the "
                              f"model at opset {target} or higher.")
    min_ir = helper.find_min_ir_version_for(list(out.opset_import), ignore_unknown=True)
    if out.ir_version < min_ir:
        out.ir_version = min_ir
    unnamed = [n for _, n in iter_nodes(out.graph) if not n.name]
    if unnamed:
        names = NameAllocator(all_names(out.graph))
        for n in unnamed:
            n.name = names.new(n.op_type, always_suffix=True)
    return out


def _op_in_message(text: str, proto: onnx.ModelProto) -> str | None:
    """The op type the converter complains about: an op of the model named in ``text``."""
    ops = sorted({n.op_type for _, n in iter_nodes(proto.graph)}, key=len, reverse=True)
    match = _OP_IN_MESSAGE.search(text)
    if match and match.group(1) in ops:
        return match.group(1)
    return next((op for op in ops if re.search(rf"(?<![A-Za-z]){re.escape(op)}(?![a-z])", text)), None)
