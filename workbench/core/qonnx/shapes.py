"""Static input shapes for QONNX files, so the ``qonnx`` package (and FINN) run them as written.

qonnx's executor (``qonnx.core.onnx_exec.execute_onnx``) refuses a model whose tensors lack a
static shape ("Found unspecified tensor shapes, try infer_shapes"), and its ``cleanup_model`` turns
a symbolic batch ``N`` into 0. A QONNX export therefore fixes every input's shape and records every
tensor's shape in ``value_info`` (:func:`workbench.core.qonnx.writer.with_static_shapes`):

- shapes the user gives (``--input-shape NAME:DIMS``, :func:`parse_input_shape`) win;
- otherwise an input whose only symbolic dimension is the first one (the batch) gets batch 1;
- an input with other symbolic dimensions (image height / width, sequence length) cannot be
  guessed: the model is written with its symbolic shapes, as before, and :func:`resolve_input_shapes`
  returns a note naming the input and the flag to give.

Models whose inputs are all static already are left as they are unless shapes are given, so the
default export of those models keeps its bytes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import onnx

from workbench.core.errors import ExportError

_DIMS = re.compile(r"^\s*\d+(\s*[,x]\s*\d+)*\s*$")
#: Largest dimension and largest element count ``--input-shape`` takes: 2**31 - 1, onnxruntime's int32
#: limits on a dimension in many kernels; 2**31 elements of float32 are 8 GiB, more than any model input.
MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 2**31 - 1


def parse_input_shape(text: str) -> tuple[str, list[int]]:
    """``"NAME:DIMS"`` -> ``(NAME, [d0, d1, ...])``; DIMS are positive integers joined by ``,`` or ``x``.

    The name is everything before the last ``:`` (ONNX names such as ``input:0`` keep their colon).

    Raises
    ------
    ExportError
        No ``:``, an empty name, DIMS that are not positive whole numbers, a dimension over
        :data:`MAX_DIM` or more than :data:`MAX_ELEMENTS` elements in all.
    """
    name, sep, dims = text.rpartition(":")
    if not sep or not name:
        raise ExportError(f"--input-shape {text!r}: expected NAME:DIMS, e.g. input:1,3,224,224.",
                          hint="Give the input's name, a colon and its dimensions.")
    signed = re.fullmatch(r"\s*-?\d+(\s*[,x]\s*-?\d+)*\s*", dims)
    if not _DIMS.match(dims) and not signed:
        raise ExportError(f"--input-shape {text!r}: {dims!r} is not a list of whole numbers (e.g. 1,3,224,224 or "
                          "1x3x224x224).",
                          hint="Separate the dimensions with commas or x; every dimension must be a number >= 1.")
    values = [int(d) for d in re.split(r"[,x]", dims.replace(" ", ""))]
    bad = next((v for v in values if v < 1), None)
    if bad is not None:
        raise ExportError(f"--input-shape {text!r}: dimension {bad} is not allowed: every dimension is 1 or more "
                          "(the size the model runs at, not -1 or 0 for a dynamic one).",
                          hint="Give the real size of each dimension, e.g. 1 for the batch.")
    _refuse_unreal(text, name, values)
    return name, values


def _refuse_unreal(text: str, name: str, values: list[int]) -> None:
    """Refuse dimensions no real tensor has (over :data:`MAX_DIM`, or :data:`MAX_ELEMENTS` in all)."""
    hint = "Give the shape the model runs at, e.g. input:1,3,224,224."
    for i, v in enumerate(values):
        if v > MAX_DIM:
            raise ExportError(f"--input-shape {text!r}: dimension {i} of input {name!r} is {v}, over {MAX_DIM} "
                              "(2**31 - 1), larger than any real tensor's.", hint=hint)
    total = math.prod(values)
    if total > MAX_ELEMENTS:
        raise ExportError(f"--input-shape {text!r}: input {name!r} would hold {total:.3g} elements, over "
                          f"{MAX_ELEMENTS} (2**31 - 1; 8 GiB of float32), more than any real model input.",
                          hint=hint)


def _dims(vi: onnx.ValueInfoProto) -> list[int | str] | None:
    """Dimensions of a graph input: ints where static, the dim_param (or "?") where not; None = no shape."""
    t = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not t.HasField("shape"):
        return None
    out: list[int | str] = []
    for d in t.shape.dim:
        if d.HasField("dim_value") and d.dim_value > 0:
            out.append(int(d.dim_value))
        else:
            out.append(d.dim_param or "?")
    return out


@dataclass
class ShapeChoice:
    """What a QONNX export does with the input shapes.

    Attributes
    ----------
    shapes : dict of str to list of int, or None
        Static shape of every graph input, or None to write the model with its shapes as they are.
    defaulted : list of str
        Inputs whose symbolic batch was set to 1.
    note : str or None
        Why the model stays symbolic (inputs with symbolic dimensions besides the batch), naming the flag.
    """

    shapes: dict[str, list[int]] | None
    defaulted: list[str] = field(default_factory=list)
    note: str | None = None


def graph_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs that are not initializers (what a user feeds)."""
    inits = {i.name for i in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in inits]


def resolve_input_shapes(proto: onnx.ModelProto, given: dict[str, list[int]] | None = None, *,
                         source: str = "the model") -> ShapeChoice:
    """Decide the static input shapes of a QONNX export of ``proto`` (see the module docstring).

    Parameters
    ----------
    proto : onnx.ModelProto
        The float or quantized model (its graph inputs are read, not modified).
    given : dict of str to list of int, optional
        Shapes from the user; each must name a graph input, have its rank and keep its static dims.
    source : str
        How to name the model in messages (its file).

    Raises
    ------
    ExportError
        A name that is not an input, a wrong number of dimensions, a dimension that differs from
        a static one of the model, or one no real tensor has (over :data:`MAX_DIM`, or over
        :data:`MAX_ELEMENTS` elements); the message names the input and its shape.
    """
    given = dict(given or {})
    inputs = graph_inputs(proto)
    by_name = {i.name: i for i in inputs}
    for name, dims in given.items():
        _refuse_unreal(f"{name}:{','.join(map(str, dims))}", name, list(dims))  # a project's shapes too
        if name not in by_name:
            raise ExportError(f"--input-shape {name}: {source} has no input {name!r} "
                              f"(inputs: {', '.join(by_name) or 'none'}).", hint="Use one of the input names.")
        have = _dims(by_name[name])
        shown = " x ".join(str(d) for d in have) if have is not None else "unknown"
        if have is not None and len(have) != len(dims):
            raise ExportError(f"--input-shape {name}:{','.join(map(str, dims))}: input {name!r} of {source} has "
                              f"{len(have)} dimensions ({shown}), not {len(dims)}.",
                              hint=f"Give {len(have)} dimensions.")
        for i, (want, d) in enumerate(zip(have or [], dims, strict=False)):
            if isinstance(want, int) and want != d:
                raise ExportError(f"--input-shape {name}:{','.join(map(str, dims))}: dimension {i} of input "
                                  f"{name!r} is fixed to {want} in {source} ({shown}).",
                                  hint=f"Keep {want} there; only symbolic dimensions can be set.")
    shapes: dict[str, list[int]] = {}
    defaulted, open_inputs = [], []
    for vi in inputs:
        if vi.name in given:
            shapes[vi.name] = list(given[vi.name])
            continue
        dims = _dims(vi)
        if dims is None:
            open_inputs.append(f"{vi.name} (no shape)")
            continue
        symbolic = [i for i, d in enumerate(dims) if not isinstance(d, int)]
        if symbolic == [0]:
            shapes[vi.name] = [1, *dims[1:]]
            defaulted.append(vi.name)
        elif not symbolic:
            shapes[vi.name] = list(dims)
        else:
            open_inputs.append(f"{vi.name} [{', '.join(str(d) for d in dims)}]")
    if open_inputs:
        return ShapeChoice(None, [], f"{source}: QONNX written with symbolic input shapes, which qonnx's "
                           f"executor and cleanup cannot run: {', '.join(open_inputs)}; give "
                           "--input-shape NAME:DIMS for each to get a file qonnx/FINN runs as written.")
    if not given and not defaulted:
        return ShapeChoice(None)  # static already: written as before
    return ShapeChoice(shapes, defaulted)
