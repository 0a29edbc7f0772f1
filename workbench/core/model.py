"""Loading and preparing an ONNX model for quantization.

``load_model`` reads a file (external data resolved beside the model) and returns a
:class:`PreparedModel` whose ``proto`` is ready for the planner, calibrator and writers.
The user's file is never modified.

NOTE: first cut — the full preparation (unique names, constant lifting, opset upgrade,
already-quantized detection) is being built in this module.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.errors import ModelError


@dataclass
class InputInfo:
    """A real (data) input of the model: not an initializer.

    ``shape`` entries are ints, symbolic names (str) or None for unknown.
    """

    name: str
    dtype: np.dtype
    shape: list[int | str | None]


@dataclass
class Rename:
    """A name the preparation changed: ``kind`` is "node" or "tensor"."""

    kind: str
    old: str
    new: str


@dataclass
class PreparedModel:
    """A model ready for quantization.

    Attributes
    ----------
    proto : onnx.ModelProto
        Prepared copy (unique non-empty names, Constant weights lifted to initializers, shapes
        inferred, opset >= 13). External data is loaded into memory.
    path : Path or None
        The file it came from.
    sha256 : str
        Hex digest of the model file's bytes (empty when built in memory).
    renames : list of Rename
        Names the preparation changed.
    notes : list of str
        What preparation did (opset upgrade, constants lifted, ...).
    quantized_nodes : list of str
        Nodes that are already quantized ops (QuantizeLinear, QLinearConv, ConvInteger, ...).
    """

    proto: onnx.ModelProto
    path: Path | None = None
    sha256: str = ""
    renames: list[Rename] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    quantized_nodes: list[str] = field(default_factory=list)

    @property
    def graph(self) -> onnx.GraphProto:
        return self.proto.graph

    @property
    def opset(self) -> int:
        for o in self.proto.opset_import:
            if o.domain in ("", "ai.onnx"):
                return o.version
        return 0

    @property
    def initializer_names(self) -> set[str]:
        return {i.name for i in self.graph.initializer}

    @property
    def inputs(self) -> list[InputInfo]:
        """Data inputs (graph inputs that are not initializers)."""
        inits = self.initializer_names
        out = []
        for vi in self.graph.input:
            if vi.name in inits:
                continue
            tt = vi.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
            out.append(InputInfo(vi.name, np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)), dims))
        return out

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.graph.output]

    def initializer(self, name: str) -> np.ndarray:
        for init in self.graph.initializer:
            if init.name == name:
                return numpy_helper.to_array(init)
        raise KeyError(name)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_model(path: str | Path) -> PreparedModel:
    """Load and prepare the ONNX model at ``path``.

    Raises
    ------
    ModelError
        The file is missing, truncated, not ONNX, or its external data is missing.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: no such model file.", hint="Check the path.")
    try:
        proto = onnx.load(str(path), load_external_data=True)
    except Exception as exc:  # noqa: BLE001 - onnx raises many types for bad files
        raise ModelError(f"{path}: not a readable ONNX model ({exc.__class__.__name__}: {exc}).",
                         hint="Re-export the model or pick another file.") from None
    return prepare_proto(proto, path=path, sha256=sha256_file(path))


def prepare_proto(proto: onnx.ModelProto, *, path: Path | None = None, sha256: str = "") -> PreparedModel:
    """Prepare an in-memory model (a copy is made; ``proto`` is not modified)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    try:
        copy = onnx.shape_inference.infer_shapes(copy)
    except Exception:  # noqa: BLE001 - shape inference is best effort
        pass
    return PreparedModel(copy, path, sha256)
