"""``inspect`` without importing onnx or numpy, for models preparation would leave as they are.

``import onnx`` costs about 0.25 s of CPU (numpy, onnx.helper, the reference tables) before a
single byte is read, which is most of what ``workbench-cli inspect`` spends on a small model.
This module reads the file with onnx's own generated protobuf classes (``onnx_ml_pb2``, loaded by
file location so that the ``onnx`` package itself does not run) and runs onnx's C++ shape
inference from its extension module directly, as :func:`onnx.shape_inference.infer_shapes` does.

It answers only for a model that passes the reader's checks (the same ``onnx.checker`` full check
of the weight-less skeleton, ir_version and opset versions, UTF-8 names) and on which :func:`workbench.core.model.load.load_model` would change
nothing the report shows: main graph only (no If / Loop bodies), default-domain opset >= 13, no
Constant node, no initializer listed as a graph input, unique non-empty node names, every tensor
defined once, no quantized operator, no BatchNormalization, no Mul / Add of a Conv output and an
initializer (the affine folding), no external data, and every stored
tensor of a plain numeric type whose data matches its dims. For any other model
:func:`quick_report` returns None and the caller takes the full path (which also gives the
one-line errors for bad files), so the report is the same either way.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

from workbench.core.graph.shell import model_shell

#: ONNX TensorProto.DataType -> (numpy dtype name, itemsize) for the plain numeric types
#: (onnx.helper.tensor_dtype_to_np_dtype; anything else takes the full path)
#: ONNX element type -> (numpy's name, bytes per value); reports name every type this way (numpy's name
#: where numpy has the type, else ONNX's in lower case: :func:`dtype_label`)
_NUMERIC = {1: ("float32", 4), 2: ("uint8", 1), 3: ("int8", 1), 4: ("uint16", 2), 5: ("int16", 2),
            6: ("int32", 4), 7: ("int64", 8), 9: ("bool", 1), 10: ("float16", 2), 11: ("float64", 8),
            12: ("uint32", 4), 13: ("uint64", 8)}
#: typed-data field of a tensor stored without raw_data (ONNX IR spec, onnx.proto comments)
_TYPED_FIELD = {1: "float_data", 2: "int32_data", 3: "int32_data", 4: "int32_data", 5: "int32_data",
                6: "int32_data", 7: "int64_data", 9: "int32_data", 10: "int32_data", 11: "double_data",
                12: "uint64_data", 13: "uint64_data"}
_DEFAULT = ("", "ai.onnx")
_MIN_OPSET = 13  # workbench.core.model.load.MIN_OPSET
_SKELETON_BYTES = 1 << 12  # workbench.core.model.shapes._SKELETON_BYTES
_TENSOR, _GRAPH, _TENSORS, _GRAPHS, _SPARSE, _SPARSES = 4, 5, 9, 10, 11, 12  # AttributeProto.AttributeType
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
#: op types the full path treats specially (workbench.core.graph.quantized_ops, model.batchnorm)
_SPECIAL = ("Constant", "BatchNormalization", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
            "ConvInteger", "MatMulInteger")
#: element-wise ops that preparation may fold into the Conv that feeds them (workbench.core.model.affine)
_AFFINE = ("Mul", "Add")


def _load(name: str, path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def onnx_parts() -> tuple[ModuleType, ModuleType] | None:
    """``(onnx_ml_pb2, onnx_cpp2py_export)`` of the installed onnx, without running ``onnx/__init__``
    (the ``onnx`` package's own modules when it is already imported); None when not found.

    The protobuf module is loaded under a private name (protobuf hands back the same message
    classes as onnx's: one descriptor pool); the extension module under its own name, which a later
    ``import onnx`` reuses (an extension module cannot be initialised twice).
    """
    if "onnx" in sys.modules:
        onnx = sys.modules["onnx"]
        return onnx.onnx_ml_pb2, onnx.onnx_cpp2py_export
    try:
        spec = importlib.util.find_spec("onnx")
        folder = os.path.dirname(spec.origin) if spec and spec.origin else None
        if folder is None:
            return None
        ext = [f for f in os.listdir(folder) if f.startswith("onnx_cpp2py_export.") and f.endswith((".so", ".pyd"))]
        if len(ext) != 1:
            return None
        pb2 = sys.modules.get("workbench._onnx_ml_pb2") or _load("workbench._onnx_ml_pb2",
                                                                  os.path.join(folder, "onnx_ml_pb2.py"))
        c = sys.modules.get("onnx.onnx_cpp2py_export") or _load("onnx.onnx_cpp2py_export",
                                                                 os.path.join(folder, ext[0]))
    except (ImportError, OSError):
        return None
    return pb2, c


def quick_report(path: str | Path) -> dict | None:
    """The :func:`workbench.core.inspection.report.inspect_model` dict of the model file at
    ``path``, or None when the model needs the full path (see the module docstring)."""
    path = Path(path)
    parts = onnx_parts()
    if parts is None:
        return None
    pb2, c = parts
    try:
        data = path.read_bytes()
        proto = pb2.ModelProto()
        proto.ParseFromString(data)
    except Exception:  # noqa: BLE001 - missing, unreadable or not ONNX: the full path says which
        return None
    try:
        if not data or not _valid(proto, pb2, c) or not _plain(proto):
            return None
    except Exception:  # noqa: BLE001 - e.g. a name that is not UTF-8: the full path names the problem
        return None
    outputs = _checked_outputs(proto, pb2, c)
    if outputs is None:
        return None
    g = proto.graph
    hist = Counter(n.op_type if n.domain in _DEFAULT else f"{n.domain}::{n.op_type}" for n in g.node)
    inits = {t.name for t in g.initializer}
    return {
        "file": str(path),
        "sha256": hashlib.sha256(data).hexdigest(),
        "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
        "ir_version": proto.ir_version,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in proto.opset_import},
        "original_opset": _default_opset(proto),
        "nodes": sum(hist.values()),
        "nodes_main_graph": len(g.node),
        "op_histogram": dict(hist.most_common()),
        "initializers": len(g.initializer),
        "weights": _weights(g, pb2),
        "inputs": [_input(vi) for vi in g.input if vi.name not in inits],
        "outputs": [_value_info(vi, pb2) for vi in outputs],
        "subgraphs": [],
        "quantized": {"nodes": 0, "kinds": {}, "op_types": {}, "constant_weight_ops": {}},
        "quantization_summary": None,
        "quantization_parameters": [],
        "units": None,
        "renames": [],
        "ambiguous_names": {},
        "notes": [],
    }


def _default_opset(proto) -> int:
    return next((o.version for o in proto.opset_import if o.domain in _DEFAULT), 0)


def _valid(proto, pb2, c) -> bool:
    """The file checks of :func:`workbench.core.model.reader.read_model_file` that do not need the
    weights: required fields, text fields, ir_version and opset versions the installed onnx knows
    (``onnx.checker`` runs on the skeleton, in :func:`_checked_outputs`)."""
    if not proto.HasField("graph") or not proto.opset_import or proto.ir_version <= 0 or not proto.graph.output:
        return False
    if proto.ir_version > pb2.IR_VERSION:
        return False
    newest = c.defs.schema_version_map()[""][1]  # onnx.defs.onnx_opset_version()
    if any(o.version < 1 or ((o.domain or "ai.onnx") == "ai.onnx" and o.version > newest) for o in proto.opset_import):
        return False
    g = proto.graph
    fields = [proto.producer_name, proto.producer_version, proto.domain, proto.doc_string, g.name, g.doc_string]
    for n in g.node:
        fields += [n.name, n.op_type, n.domain, n.doc_string, *n.input, *n.output, *(a.name for a in n.attribute)]
    for vi in (*g.input, *g.output, *g.value_info, *g.initializer):
        fields += [vi.name, vi.doc_string]
    fields += [o.domain for o in proto.opset_import]
    fields += [x for prop in proto.metadata_props for x in (prop.key, prop.value)]
    return all(isinstance(f, str) for f in fields)


def _plain(proto) -> bool:
    """True when preparation would not change anything the report shows."""
    g = proto.graph
    if not proto.HasField("graph") or _default_opset(proto) < _MIN_OPSET or g.sparse_initializer:
        return False
    names = [n.name for n in g.node]
    if not all(names) or len(set(names)) != len(names):
        return False
    inits = [t.name for t in g.initializer]
    defined = [vi.name for vi in g.input] + inits + [o for n in g.node for o in n.output if o]
    if len(set(defined)) != len(defined):  # also catches an initializer listed as an input
        return False
    convs = {n.output[0] for n in g.node if n.op_type == "Conv" and n.output}
    stored = set(inits)
    for n in g.node:
        if n.op_type in _SPECIAL or n.op_type.startswith(("QLinear", "QOrdered")) or n.domain not in _DEFAULT:
            return False
        if n.op_type in _AFFINE and convs.intersection(n.input) and stored.intersection(n.input):
            return False  # a Conv output times / plus a constant: model.affine may fold it into the Conv
        for a in n.attribute:
            if a.type in (_GRAPH, _GRAPHS, _SPARSE, _SPARSES) or a.type == _TENSORS:
                return False
            if a.type == _TENSOR and not _tensor_ok(a.t):
                return False
    return all(_tensor_ok(t) for t in g.initializer)


#: every value field of a TensorProto but raw_data (onnx.proto)
_VALUES = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def _tensor_ok(t) -> bool:
    """A numeric tensor stored in the file whose data size matches ``prod(dims)`` (the checks of
    :func:`workbench.core.model.tensor_check.check_tensors`, which the full path reports)."""
    if t.data_type not in _NUMERIC or t.data_location == _EXTERNAL or any(d < 0 for d in t.dims):
        return False
    count = math.prod(t.dims)
    if t.raw_data:  # and no value field beside it (the full path refuses a tensor holding its values twice)
        return len(t.raw_data) == count * _NUMERIC[t.data_type][1] and not any(len(getattr(t, f)) for f in _VALUES)
    return len(getattr(t, _TYPED_FIELD[t.data_type])) == count and not t.HasField("raw_data")


def _checked_outputs(proto, pb2, c):
    """Graph outputs after ``onnx.checker`` (full check) and onnx shape inference (strict off, data
    propagation on) of the weight-less skeleton, as :func:`workbench.core.model.reader.check_structure`
    and :func:`workbench.core.model.shapes.infer_shapes` run them; None if either fails (the full
    path refuses the model or notes why)."""
    sk = model_shell(proto, pb2.ModelProto)
    g, src = sk.graph, proto.graph
    for t in src.initializer:
        if math.prod(t.dims) * _NUMERIC[t.data_type][1] > _SKELETON_BYTES:
            vi = g.input.add()
            vi.name = t.name
            tt = vi.type.tensor_type
            tt.elem_type = t.data_type
            tt.shape.SetInParent()
            for d in t.dims:
                tt.shape.dim.add().dim_value = d
        else:
            g.initializer.append(t)
    try:
        light = sk.SerializeToString()
        c.checker.check_model(light, True, False, False)  # onnx.checker.check_model(light, full_check=True)
        out = pb2.ModelProto()
        out.ParseFromString(c.shape_inference.infer_shapes(light, False, False, True))
    except Exception:  # noqa: BLE001 - the full path refuses the model or notes the failure
        return None
    return list(out.graph.output)


def dtype_label(elem_type: int, onnx_name: str) -> str:
    """How a report names an element type: numpy's name (``float32``, ``float16``, ``int8`` ...) where
    numpy has the type, else ``onnx_name`` (the TensorProto.DataType name) in lower case (``bfloat16``,
    ``float8e4m3fn``, ``int4`` ...). Inputs, outputs and weights then read alike."""
    known = _NUMERIC.get(elem_type)
    return known[0] if known else onnx_name.lower()


def _weights(g, pb2) -> dict:
    by_dtype: Counter = Counter()
    elements = 0
    for t in g.initializer:
        n = math.prod(t.dims) if t.dims else 1
        elements += n
        by_dtype[dtype_label(t.data_type, pb2.TensorProto.DataType.Name(t.data_type))] += (
            len(t.raw_data) if t.raw_data else n * _NUMERIC[t.data_type][1])
    return {
        "count": len(g.initializer),
        "bytes": int(sum(by_dtype.values())),
        "elements": elements,
        "by_dtype": dict(by_dtype.most_common()),
        "location": "initializers",
        "lifted_from_constant_nodes": 0,
        "external_data_files": [],
    }


def _input(vi) -> dict:
    tt = vi.type.tensor_type
    dims = [(d.dim_value if d.dim_value >= 0 else None) if d.HasField("dim_value") else (d.dim_param or None)
            for d in tt.shape.dim]
    return {"name": vi.name, "dtype": _NUMERIC.get(tt.elem_type, ("object", 0))[0], "shape": dims}


def _value_info(vi, pb2) -> dict:
    tt = vi.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
    dtype = dtype_label(tt.elem_type, pb2.TensorProto.DataType.Name(tt.elem_type)) if tt.elem_type else "unknown"
    return {"name": vi.name, "dtype": dtype, "shape": shape}
