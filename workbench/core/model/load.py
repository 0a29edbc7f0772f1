"""Loading and preparing an ONNX model for quantization.

``load_model`` reads a file (external data resolved beside the model, never from the working
directory) and returns a :class:`PreparedModel` whose ``proto`` is ready for the planner,
calibrator and writers. The user's file is never modified. Preparation, in order:

1. opset upgrade to 13 when lower (``onnx.version_converter``; skipped for quantized models);
2. Constant nodes lifted to initializers, initializers removed from ``graph.input`` (onnx_ir
   passes; case 23);
3. tensor names made unique, then node names made unique and non-empty across the main graph and
   every subgraph (case 24), each rename reported;
4. already-quantized operators recorded;
5. ``Cast`` of a float16 / bfloat16 initializer to float32 folded into a float32 initializer
   (:mod:`workbench.core.model.cast_fold`; float models only, case 17), then inference-mode
   ``Conv -> BatchNormalization`` pairs folded into the Conv (float models only;
   :mod:`workbench.core.model.batchnorm`), then ``Mul`` / ``Add`` by per-channel constants after a
   Conv folded into it (:mod:`workbench.core.model.affine`; files only, see :func:`prepare_proto`),
   each reported;
6. shape inference (``onnx.shape_inference``, symbolic dims kept).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from workbench.core.errors import ModelError
from workbench.core.graph import walk as _graphs
from workbench.core.graph.quantized_ops import QuantizedNode, find_quantized, quantized_kind
from workbench.core.io.atomic import protect_input
from workbench.core.io.digest import sha256 as _sha256
from workbench.core.io.external import lazy_tensors, tensor_array
from workbench.core.io.later_digest import DigestField, LaterDigest
from workbench.core.io.tensor_bytes import tensor_nbytes
from workbench.core.model.affine import fold_conv_affines
from workbench.core.model.batchnorm import fold_batchnorms
from workbench.core.model.cast_fold import fold_weight_casts
from workbench.core.model.naming import fix_node_names, fix_tensor_names
from workbench.core.model.opset import default_opset
from workbench.core.model.opset import upgrade_opset as _upgrade_opset
from workbench.core.model.reader import read_model_file
from workbench.core.model.shapes import infer_shapes
from workbench.core.model.weights import count_constants, lift_weights
from workbench.core.progress import CancelToken, ProgressFn, StepFn, open_steps
from workbench.core.wording import count, plural

log = logging.getLogger(__name__)

#: Lowest default-domain opset a prepared model has (per-axis QuantizeLinear needs 13).
MIN_OPSET = 13

__all__ = [
    "MIN_OPSET", "InputInfo", "PreparedModel", "QuantizedNode", "Rename",
    "load_model", "prepare_proto", "quantized_kind", "sha256_file", "upgrade_opset",
]


@dataclass
class InputInfo:
    """A real (data) input of the model: not an initializer.

    ``shape`` entries are ints, symbolic names (str) or None for unknown; ``dtype`` is the numpy
    dtype of the ONNX element type (``object`` for strings).
    """

    name: str
    dtype: np.dtype
    shape: list[int | str | None]
    has_shape: bool = True  # False when the model declares no shape at all (rank unknown)

    @property
    def rank(self) -> int | None:
        return len(self.shape) if self.has_shape else None


@dataclass
class Rename:
    """A name the preparation changed: ``kind`` is "node" or "tensor"; ``old`` may be ``""``
    (an unnamed node); ``graph`` is the graph path (``""`` = main graph, see
    :mod:`workbench.core.graph.walk`)."""

    kind: str
    old: str
    new: str
    graph: str = ""


@dataclass
class PreparedModel:
    """A model ready for quantization.

    Attributes
    ----------
    proto : onnx.ModelProto
        Prepared copy (unique non-empty names, Constant weights lifted to initializers, shapes
        inferred, opset >= 13 unless the upgrade failed, see ``notes``). External data is
        loaded into memory, except the big initializers of a model with large external data:
        those stay on disk as references (see :mod:`workbench.core.io.external`); read values
        through :meth:`initializer`.
    path : Path or None
        The file it came from.
    sha256 : str
        Hex digest of the model file's bytes (empty when built in memory). A model loaded with
        ``hash_now=False`` hashes its file the first time this is read, "" if the file changed since
        it was read (:mod:`workbench.core.io.later_digest`).
    renames : list of Rename
        Names the preparation changed.
    notes : list of str
        What preparation did (opset upgrade, constants lifted, inputs dropped, ...).
    quantized_nodes : list of str
        Names of nodes that are already quantized ops (QuantizeLinear, QLinearConv, ConvInteger, ...).
    quantized : list of QuantizedNode
        The same nodes with op type, domain, kind (QDQ / QOperator / dynamic / weight_only / QONNX)
        and graph path.
    ambiguous_names : dict of str to list of str
        Original node name shared by several nodes -> the new names of those nodes. A recipe that
        names a key here must be rejected as ambiguous.
    original_opset : int
        Default-domain opset of the input model.
    external_data_files : list of str
        External data files the weights were read from (relative to the model's folder).
    lifted_constants : int
        Number of Constant nodes turned into initializers.
    declared_value_info : frozenset of str or None
        Main-graph tensors whose ``value_info`` the model declared itself (after its Constants were
        lifted), before preparation's shape inference added the rest; None when not recorded (every
        ``value_info`` then counts as declared). The writers keep only these
        (:func:`workbench.core.writers.common.keep_declared_value_info`).
    """

    proto: onnx.ModelProto
    path: Path | None = None
    sha256: str = DigestField()
    renames: list[Rename] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    quantized_nodes: list[str] = field(default_factory=list)
    quantized: list[QuantizedNode] = field(default_factory=list)
    ambiguous_names: dict[str, list[str]] = field(default_factory=dict)
    original_opset: int = 0
    external_data_files: list[str] = field(default_factory=list)
    lifted_constants: int = 0
    declared_value_info: frozenset[str] | None = None

    @property
    def graph(self) -> onnx.GraphProto:
        return self.proto.graph

    @property
    def name(self) -> str:
        """File name for messages (``"<in-memory model>"`` when built in memory)."""
        return str(self.path) if self.path else "<in-memory model>"

    @property
    def opset(self) -> int:
        """Default-domain opset of the prepared model."""
        return default_opset(self.proto)

    @property
    def initializer_names(self) -> set[str]:
        """Names of the initializers of the main graph and of every subgraph."""
        return set(self._initializers)

    @cached_property
    def _initializers(self) -> dict[str, onnx.TensorProto]:
        return {t.name: t for _, g in self.iter_graphs() for t in g.initializer}

    @property
    def inputs(self) -> list[InputInfo]:
        """Data inputs (graph inputs that are not initializers), in graph order."""
        inits = {i.name for i in self.graph.initializer}
        return [_input_info(vi) for vi in self.graph.input if vi.name not in inits]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.graph.output]

    def initializer(self, name: str) -> np.ndarray:
        """Value of initializer ``name`` (main graph or any subgraph) as a numpy array (read-only
        and memory-mapped for a weight kept on disk).

        Raises
        ------
        KeyError
            No initializer has that name.
        """
        return tensor_array(self._initializers[name])

    def iter_graphs(self) -> Iterator[tuple[str, onnx.GraphProto]]:
        """Yield ``(graph path, graph)`` for the main graph (path ``""``) and every subgraph."""
        return _graphs.iter_graphs(self.graph)

    def iter_nodes(self) -> Iterator[tuple[str, onnx.NodeProto]]:
        """Yield ``(graph path, node)`` for every node, subgraph nodes included."""
        return _graphs.iter_nodes(self.graph)

    def node(self, name: str) -> onnx.NodeProto:
        """The node called ``name`` (any graph). Raises KeyError when absent."""
        return self._nodes[name][1]

    def node_graph(self, name: str) -> str:
        """Graph path of the node called ``name``. Raises KeyError when absent."""
        return self._nodes[name][0]

    @cached_property
    def _nodes(self) -> dict[str, tuple[str, onnx.NodeProto]]:
        return {n.name: (p, n) for p, n in self.iter_nodes()}

    def original_name(self, name: str) -> str:
        """Name a node had in the user's file before preparation renamed it (``""`` for an unnamed
        node); ``name`` itself when it was not renamed."""
        return self._original.get(name, name)

    @cached_property
    def _original(self) -> dict[str, str]:
        return {r.new: r.old for r in self.renames if r.kind == "node"}

    def new_name(self, base: str) -> str:
        """A tensor or node name unused anywhere in the model and never handed out before
        (``base`` itself when free, else ``base_0``, ``base_1``, ...)."""
        return self._allocator.new(base)

    @cached_property
    def _allocator(self) -> _graphs.NameAllocator:
        return _graphs.NameAllocator(_graphs.all_names(self.graph))


def _input_info(vi: onnx.ValueInfoProto) -> InputInfo:
    tt = vi.type.tensor_type
    dims: list[int | str | None] = [
        (d.dim_value if d.dim_value >= 0 else None) if d.HasField("dim_value") else (d.dim_param or None)
        for d in tt.shape.dim]
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
    except (KeyError, TypeError, ValueError):
        dtype = np.dtype(object)
    return InputInfo(vi.name, dtype, dims, tt.HasField("shape"))


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    with open(path, "rb") as f:
        h = _sha256(size=os.fstat(f.fileno()).st_size)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_model(path: str | Path, *, hash_now: bool = True, progress: ProgressFn | None = None,
               cancel: CancelToken | None = None) -> PreparedModel:
    """Load and prepare the ONNX model at ``path`` (the file is only read).

    ``progress(done, total, step)`` is told each of :data:`~workbench.core.progress.OPEN_STEPS` as it starts;
    ``cancel`` is checked between them (a step itself, such as parsing a 2 GiB file, is not interrupted).

    ``hash_now=False``: a file of 1 MiB or more is hashed only when ``sha256`` is first read, for a job
    that may never read it (``quantize --no-auto``; a 90 MB file costs 0.05 s of CPU). Then ``sha256``
    is "" if the file was changed, replaced or removed in between. The app hashes at once: it reads the
    digest long after opening (saving a project), when the file may have changed.

    Raises
    ------
    ModelError
        The file is missing, empty, truncated, not ONNX, or its external data is missing,
        truncated or outside the model's folder.
    Cancelled
        ``cancel`` was cancelled before a step.
    """
    path = Path(path)
    step = open_steps(progress, cancel)
    proto, digest, external = read_model_file(path, hash_now=hash_now, step=step)
    for f in [path, *(path.parent / e for e in external)]:
        protect_input(f)  # exports and saves refuse to write onto the files this model came from
    step("Preparing")
    model = _prepare(proto, path=path, sha256=digest, fold_affines=True, step=step)
    model.external_data_files = external
    if external:
        model.notes.append(f"Weights read from external data: {', '.join(external)}.")
    lazy = lazy_tensors(model.proto)
    if lazy:
        model.notes.append(f"{count(len(lazy), 'large weight')} ({sum(tensor_nbytes(t) for t in lazy) / 2**30:.2f} GiB) "
                           f"{plural(len(lazy), 'stays', 'stay')} in the external data file (memory-mapped when read).")
    return model


def prepare_proto(proto: onnx.ModelProto, *, path: Path | None = None, sha256: str = "",
                  fold_affines: bool = False, as_written: bool = False) -> PreparedModel:
    """Prepare an in-memory model (a copy is made; ``proto`` is not modified).

    ``fold_affines`` (step 5's Mul / Add folding) is off by default: in-memory models are mostly
    derived from a prepared one (SmoothQuant's ``Mul(X, 1/s)`` after a Conv must stay where the
    plan expects it); :func:`load_model` turns it on for the user's file. ``as_written`` skips steps 1
    and 5 (no opset upgrade, nothing folded): the graph as the file holds it, with the names and lifted
    Constants of a prepared one (what ``compare`` diffs a quantized file against).

    Raises
    ------
    ModelError
        The model has no graph.
    """
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return _prepare(copy, path=path, sha256=sha256, fold_affines=fold_affines, as_written=as_written)


def _prepare(proto: onnx.ModelProto, *, path: Path | None, sha256: str | LaterDigest, fold_affines: bool,
             as_written: bool = False, step: StepFn | None = None) -> PreparedModel:
    source = str(path) if path else "<in-memory model>"
    if not proto.HasField("graph"):
        raise ModelError(f"{source}: the model has no graph.", hint="Re-export the model.")
    notes: list[str] = []
    original = default_opset(proto)
    already_quantized = bool(find_quantized(proto))
    if not as_written:
        proto = _upgrade_on_load(proto, original, already_quantized, source, notes)
    proto, lifted, dropped = lift_weights(proto, in_place=True)  # ours: read or copied above
    if lifted:
        notes.append(f"Lifted {count(lifted, 'Constant node')} to initializers.")
    kept = count_constants(proto)
    if kept:
        notes.append(f"{count(kept, 'Constant node')} kept as nodes (graph outputs or not liftable).")
    if dropped:
        notes.append(f"{count(len(dropped), 'initializer')} {plural(len(dropped), 'was', 'were')} also listed as graph inputs and {plural(len(dropped), 'is', 'are')} treated as weights "
                     f"(removed from the inputs): {', '.join(dropped[:10])}{' ...' if len(dropped) > 10 else ''}.")
    names = _graphs.NameAllocator(_graphs.all_names(proto.graph))
    tensor_changes = fix_tensor_names(proto.graph, names)
    node_changes, ambiguous = fix_node_names(proto.graph, names)
    renames = [Rename(c.kind, c.old, c.new, c.graph) for c in tensor_changes + node_changes]
    notes += rename_notes(renames, ambiguous)
    quantized = find_quantized(proto)
    if not quantized and not as_written:
        casts = fold_weight_casts(proto)
        if casts:
            notes.append(f"Folded {count(len(casts), 'Cast node')} of float16 / bfloat16 weights into float32 initializers "
                         f"(same values; {', '.join(casts[:5])}{' ...' if len(casts) > 5 else ''}).")
        folded = fold_batchnorms(proto)
        if folded:
            notes.append(f"Folded {count(len(folded), 'BatchNormalization node')} into the Conv before each "
                         f"({', '.join(folded[:5])}{' ...' if len(folded) > 5 else ''}).")
        affine = fold_conv_affines(proto) if fold_affines else []
        if affine:
            notes.append(f"Folded {count(len(affine), 'Mul/Add node')} by per-channel constants into the Conv before each "
                         f"({', '.join(affine[:5])}{' ...' if len(affine) > 5 else ''}).")
    if quantized:
        kinds = Counter(q.op_type for q in quantized)
        notes.append(f"Already quantized: {count(len(quantized), 'node')} ({_fmt_counts(kinds)}).")
    declared = frozenset(vi.name for vi in proto.graph.value_info)
    if step is not None:
        step("Inferring shapes")
    proto = infer_shapes(proto, notes)
    return PreparedModel(proto, path, sha256, renames, notes, [q.name for q in quantized], quantized,
                         ambiguous, original, [], lifted, declared)


def _upgrade_on_load(proto: onnx.ModelProto, original: int, quantized: bool, source: str,
                     notes: list[str]) -> onnx.ModelProto:
    if original >= MIN_OPSET or original == 0:
        return proto
    if quantized:
        notes.append(f"Opset {original} kept: the model is already quantized.")
        return proto
    try:
        out = _upgrade_opset(proto, MIN_OPSET, source=source)
    except ModelError as exc:
        notes.append(f"Opset {original} kept: {exc.message}")
        log.warning("%s", exc)
        return proto
    notes.append(f"Upgraded opset {original} -> {MIN_OPSET} with onnx.version_converter.")
    return out


def rename_notes(renames: list[Rename], ambiguous: dict[str, list[str]]) -> list[str]:
    """One sentence per kind of name preparation changed: unnamed nodes named, shared node names made
    unique, tensors defined more than once renamed (the written model carries the new names)."""
    notes = []
    unnamed = sum(1 for r in renames if r.kind == "node" and not r.old)
    if unnamed:
        notes.append(f"Named {count(unnamed, 'unnamed node')}.")
    for old, new in ambiguous.items():
        notes.append(f"Node name '{old}' was shared by {len(new)} nodes, renamed {', '.join(new)}.")
    tensors = [r for r in renames if r.kind == "tensor"]
    if tensors:
        notes.append(f"Renamed {count(len(tensors), 'tensor')} defined more than once: "
                     + ", ".join(f"{r.old} -> {r.new}" for r in tensors[:5]) + (" ..." if len(tensors) > 5 else ""))
    return notes


def _fmt_counts(counts: Counter) -> str:
    return ", ".join(f"{op} x{n}" for op, n in counts.most_common())


def upgrade_opset(proto: onnx.ModelProto, target: int, *, source: str = "model") -> onnx.ModelProto:
    """Convert ``proto`` to default-domain opset ``target`` (see
    :func:`workbench.core.model.opset.upgrade_opset`); returns ``proto`` itself when its opset
    is already >= ``target``.

    Raises
    ------
    ModelError
        The converter has no conversion for some operator (named in the message).
    """
    return _upgrade_opset(proto, target, source=source)
