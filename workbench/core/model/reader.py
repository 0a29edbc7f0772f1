"""Reading a model file and its external data without trusting either.

External data locations are resolved relative to the model's folder (never the working
directory, as onnx does) and must stay inside it: ``../x``, absolute paths and symlinks that
point outside are refused, so a model cannot make the app read arbitrary files. One exception:
when the model file itself is a symlink, its data may also live beside the link's target (the
layout of the Hugging Face cache).
"""

from __future__ import annotations

import io
import json
import mmap
import os
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper as edh

from workbench.core.errors import ModelError, checker_line
from workbench.core.io import external
from workbench.core.io.digest import sha256 as _sha256
from workbench.core.io.later_digest import LaterDigest
from workbench.core.io.tensor_bytes import raw_data_lengths
from workbench.core.model.shapes import skeleton
from workbench.core.model.tensor_check import check_loaded, check_tensors
from workbench.core.progress import StepFn


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's text on one line (newlines collapsed), cut to ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_REEXPORT = "Re-export the model (e.g. torch.onnx.export / onnx.save) or pick another .onnx file."


def read_model_file(path: Path, *, hash_now: bool = True,
                    step: StepFn | None = None) -> tuple[onnx.ModelProto, str | LaterDigest, list[str]]:
    """Parse ``path`` and load its external data. ``step`` (:func:`workbench.core.progress.open_steps`) is
    called as reading and checking start, and again before onnx.checker; it raises Cancelled to stop there.

    Returns
    -------
    proto : onnx.ModelProto
        The model with its external tensors loaded into memory, except the big initializers of a
        model with large external data, which stay on disk (see :mod:`workbench.core.io.external`).
    sha256 : str or LaterDigest
        Hex digest of the file's bytes (the .onnx file only, not its external data). With ``hash_now``
        False and a file of :data:`_MAP_BYTES` or more, a :class:`~workbench.core.io.later_digest.LaterDigest`
        of the file as read, hashed on first use ("" if the file changed by then).
    external_files : list of str
        External data files read, relative to the model's folder.

    Raises
    ------
    ModelError
        Missing, empty, unreadable, truncated or non-ONNX file; missing, truncated or unsafe
        external data file.
    """
    step = step or _no_step
    step("Reading")
    if not path.exists():
        raise ModelError(f"{path}: no such model file.", hint="Check the path.")
    if not path.is_file():
        inside = sorted(p.name for p in path.glob("*.onnx"))[:5] if path.is_dir() else []
        raise ModelError(f"{path}: is not a file.", hint="Pass the path of an .onnx file"
                         + (f" (this folder has {', '.join(inside)})." if inside else "."))
    with _file_view(path) as (data, opened):
        if not data:
            raise ModelError(f"{path}: the file is empty (0 bytes).",
                             hint="The download or export was interrupted. " + _REEXPORT)
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(data)
        except (DecodeError, RuntimeError, ValueError) as exc:
            refuse_other_format(path, _file_bytes(path))
            raise ModelError(f"{path}: not a readable ONNX model: the file is truncated or not ONNX "
                             f"({one_line(exc)}).", hint=_REEXPORT) from None
        if not proto.HasField("graph") or not proto.opset_import or proto.ir_version <= 0:
            refuse_other_format(path, _file_bytes(path))
            missing = [what for what, ok in (("graph", proto.HasField("graph")), ("opset_import", proto.opset_import),
                                             ("ir_version", proto.ir_version > 0)) if not ok]
            raise ModelError(f"{path}: not an ONNX model or truncated ({', '.join(missing)} missing).",
                             hint=_REEXPORT)
        digest = _sha256(data).hexdigest() if hash_now or opened is None else LaterDigest(path, opened)
        lengths = raw_data_lengths(data)
    step("Checking")
    check_text_fields(proto, path)
    check_opsets(proto, path)
    unsized = check_tensors(proto, path, raw_lengths=lengths)
    external = load_external_data(proto, path)
    check_loaded(unsized, path)
    step("Checking")  # the external data read (GiBs can take a while): onnx.checker next
    check_structure(proto, path)
    return proto, digest, external


def _no_step(name: str) -> None:
    pass


#: Model files at least this large are parsed from a read-only memory map of the file
_MAP_BYTES = 1 << 20


@contextmanager
def _file_view(path: Path) -> Iterator[tuple[bytes | memoryview, os.stat_result | None]]:
    """``(bytes, fstat)`` of the model file ``path`` while the ``with`` block runs: a view of a read-only
    memory map for a file of :data:`_MAP_BYTES` or more (parsed and hashed in place: reading a
    90 MB model into a bytes object first faulted in and copied 90 MB more) with ``os.fstat`` of the
    descriptor mapped, else the bytes read and None. An unreadable file raises ModelError naming it."""
    mm = opened = None
    try:
        if path.stat().st_size >= _MAP_BYTES:
            with open(path, "rb") as f:
                opened = os.fstat(f.fileno())
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # unmappable (or emptied meanwhile): read it
        mm = None
    if mm is None:
        yield _file_bytes(path), None
        return
    view = memoryview(mm)
    try:
        yield view, opened
    finally:
        try:
            view.release()
            mm.close()
        except BufferError:  # a view of it is still alive: the map closes when that goes
            pass


def _file_bytes(path: Path) -> bytes:
    """The bytes of the model file ``path``; an unreadable file raises ModelError naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot be read ({exc.strerror}).", hint="Check the file permissions.") from None


def read_opened_file(path: Path, sha256: str) -> onnx.ModelProto | None:
    """Parse ``path`` again when it still holds the bytes it was opened from (hex digest ``sha256``).

    :func:`read_model_file` checked those bytes when the model was opened, so only the external data
    is checked again (:func:`load_external_data`: big weights stay memory-mapped); the bytes are
    hashed before they are parsed, and the tensors' data is not copied for a second size check.

    Returns
    -------
    onnx.ModelProto or None
        None when the file's sha256 is not ``sha256`` (changed since it was opened).

    Raises
    ------
    ModelError
        The file cannot be read, or its external data is missing, truncated or unsafe.
    """
    data = _file_bytes(path)
    if _sha256(data).hexdigest() != sha256:
        return None
    proto = onnx.ModelProto()
    proto.ParseFromString(data)  # the bytes read_model_file parsed
    del data
    load_external_data(proto, path)
    return proto


def check_structure(proto: onnx.ModelProto, path: Path) -> None:
    """Refuse a model that ``onnx.checker`` rejects (a node input nobody produces, nodes out of
    order, a graph output no node gives, a bad attribute): quantizing it could only end in a written
    model that fails the same check. Large weights are left out of the check (2 GiB limit).

    Raises
    ------
    ModelError
        Naming the file and the checker's first reason on one line, with the node it names
        (:func:`~workbench.core.errors.checker_line`); ``details`` the checker's whole message.
    """
    if not proto.graph.output:
        raise ModelError(f"{path}: the graph has no outputs: nothing to compute or to measure.",
                         hint="Re-export the model with its outputs declared.")
    light, _ = skeleton(proto)
    try:
        onnx.checker.check_model(light, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError, ValueError) as exc:
        raise ModelError(f"{path}: not a valid ONNX model: onnx.checker: {checker_line(str(exc))}",
                         hint="Fix the exporter or re-export the model, then check it with onnx.checker.",
                         details=str(exc).strip()) from None


def check_opsets(proto: onnx.ModelProto, path: Path) -> None:
    """Refuse an ``ir_version`` newer than the installed onnx knows, and an ``opset_import`` that no
    runtime can execute: a version below 1, a default-domain
    (``ai.onnx``) version newer than the installed onnx package knows, or none at all while nodes use
    the default domain.

    Raises
    ------
    ModelError
        Naming the file, the field (``opset_import``), the domain and the version.
    """
    if proto.ir_version > onnx.IR_VERSION:
        raise ModelError(f"{path}: ir_version {proto.ir_version} is newer than the newest this onnx package knows "
                         f"({onnx.IR_VERSION}).", hint="Re-export the model with an older onnx, or update onnx.")
    newest = onnx.defs.onnx_opset_version()
    default = None
    for entry in proto.opset_import:
        domain = entry.domain or "ai.onnx"
        if entry.version < 1:
            raise ModelError(f"{path}: opset_import of domain '{domain}' has version {entry.version}; "
                             "opset versions start at 1.", hint=_REEXPORT)
        if domain == "ai.onnx":
            default = entry.version
            if entry.version > newest:
                raise ModelError(f"{path}: opset_import of domain 'ai.onnx' has version {entry.version}, newer "
                                 f"than the newest this onnx package knows ({newest}).",
                                 hint=f"Re-export the model at opset {newest} or lower, or update onnx.")
    if default is None and any(n.domain in ("", "ai.onnx") for n in proto.graph.node):
        raise ModelError(f"{path}: opset_import has no entry for the default domain 'ai.onnx', "
                         "but the graph uses its operators.", hint=_REEXPORT)


_MAGIC = (
    (b"PK\x03\x04", "a zip archive (a PyTorch checkpoint or .keras file?)"),
    (b"\x89HDF", "an HDF5 file (a Keras .h5 model?)"),
    (b"\x80\x02", "a Python pickle (a PyTorch/scikit-learn checkpoint?)"),
    (b"\x80\x04", "a Python pickle (a PyTorch/scikit-learn checkpoint?)"),
    (b"GGUF", "a GGUF file (llama.cpp)"),
)


def refuse_other_format(path: Path, data: bytes) -> None:
    """Raise ModelError naming what ``data`` is when it is a known other format (a Workbench project, a zip
    archive, a TensorFlow Lite file, ...); return when it is none of them."""
    _refuse_project(path, data)
    _refuse_npz(path, data)
    other = sniff_format(data)
    if other:
        raise ModelError(f"{path}: this is {other}, not an ONNX model.",
                         hint="Export it to ONNX first (e.g. torch.onnx.export, tf2onnx), then open the .onnx file.")
    _refuse_text(path, data)


#: text files found where a downloaded model belongs: (how the text starts, what it is, what to do)
_TEXTS = (
    ("version https://git-lfs.github.com/spec/", "a Git LFS pointer (the model's bytes were never downloaded)",
     "Fetch the file itself: git lfs pull in its repository, or download it again from the file's own link."),
    ("<!doctype html", "a web page (HTML: the download saved a page instead of the model)",
     "Download the model again from the file's own (raw / resolve) link."),
    ("<html", "a web page (HTML: the download saved a page instead of the model)",
     "Download the model again from the file's own (raw / resolve) link."),
)
_TEXT_PROBE = 4096


def text_start(data: bytes) -> tuple[str, str] | None:
    """(the text, its first line cut to 60 characters) when ``data`` starts as UTF-8 text without control
    characters (its first :data:`_TEXT_PROBE` bytes), else None. An ONNX file is never text: it starts with
    field 1's tag, byte 0x08 (a control character)."""
    head = data[:_TEXT_PROBE]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not a character cut at the end of the probe
            return None
        text = head[:exc.start].decode("utf-8")
    text = text.lstrip("\ufeff")
    if not text.strip() or any(c < " " and c not in "\t\n\r" for c in text):
        return None
    first = text.strip().splitlines()[0].strip()
    return text, first if len(first) <= 60 else first[:57] + "..."


def _refuse_text(path: Path, data: bytes) -> None:
    """A text file given where a model belongs (a Git LFS pointer, a saved web page, JSON, notes): say so,
    quoting its first line. Returns for anything that is not UTF-8 text without control characters."""
    found = text_start(data)
    if found is None:
        return
    text, quoted = found
    for start, what, hint in _TEXTS:
        if text.lstrip().lower().startswith(start):
            raise ModelError(f"{path}: this is {what}, not an ONNX model.", hint=hint)
    raise ModelError(f"{path}: this is a text file (its first line: {quoted!r}), not an ONNX model.",
                     hint="Give the binary .onnx model file itself (exported with torch.onnx.export / onnx.save).")


def _refuse_npz(path: Path, data: bytes) -> None:
    """A NumPy .npz data file (a zip archive of .npy arrays) given where a model belongs: say it is data, name
    its arrays and where data goes. Any other zip archive returns (:func:`sniff_format` names it)."""
    if not data.startswith(b"PK\x03\x04"):
        return
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return
    if not names or not all(n.endswith(".npy") for n in names):
        return
    arrays = [n[:-4] for n in names]
    shown = ", ".join(arrays[:6]) + (f" and {len(arrays) - 6} more" if len(arrays) > 6 else "")
    raise ModelError(f"{path} is a NumPy data file (.npz, arrays {shown}), not an ONNX model.",
                     hint=f"Give it as data (--data {path}) and a .onnx model in its place.")


def _refuse_project(path: Path, data: bytes) -> None:
    """A Workbench project (.wbproj JSON) given where a model belongs: say so and name the model it records."""
    if not data.lstrip()[:1] == b"{":
        return
    try:
        doc = json.loads(data)
    except ValueError:
        return
    if not isinstance(doc, dict) or "schema_version" not in doc:
        return
    recorded = doc.get("model", {}).get("path") if isinstance(doc.get("model"), dict) else None
    model = os.path.normpath(Path(path).resolve().parent / recorded) if isinstance(recorded, str) else "MODEL.onnx"
    raise ModelError(f"{path} is a Workbench project, not a model.",
                     hint=f"Give the model it records ({model}); quantize, analyze, report and sweep also take the "
                          "project itself.")


def sniff_format(data: bytes) -> str | None:
    """Name of a well-known non-ONNX format the bytes start with, else None."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return what
    if data[4:8] == b"TFL3":
        return "a TensorFlow Lite flatbuffer"
    if data[4:8] == b"ORTM":
        return "an onnxruntime ORT-format model (convert from the original .onnx instead)"
    if len(data) > 9 and data[8:9] == b"{" and int.from_bytes(data[:8], "little") < len(data):
        return "a safetensors weights file (weights only, no graph)"
    return None


def check_text_fields(proto: onnx.ModelProto, path: Path) -> None:
    """Raise ModelError when a name, op type or domain is not valid UTF-8 text (a corrupted file;
    protobuf only notices when the field is read)."""
    try:
        _text(proto.producer_name, proto.producer_version, proto.domain, proto.doc_string)
        for g in _graphs(proto.graph):
            _text(g.name, g.doc_string)
            for n in g.node:
                _text(n.name, n.op_type, n.domain, n.doc_string, *n.input, *n.output, *(a.name for a in n.attribute))
            for vi in (*g.input, *g.output, *g.value_info, *g.initializer):
                _text(vi.name, vi.doc_string)
        for o in proto.opset_import:
            _text(o.domain)
        for prop in proto.metadata_props:
            _text(prop.key, prop.value)
    except (UnicodeDecodeError, TypeError) as exc:
        raise ModelError(f"{path}: the file is corrupted (a name is not valid UTF-8 text: {one_line(exc, 120)}).",
                         hint=_REEXPORT) from None


def _text(*values) -> None:
    for v in values:
        if not isinstance(v, str):
            raise TypeError(f"{v!r} is not text")


def _graphs(graph: onnx.GraphProto):
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _graphs(g)


def external_tensors(proto: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Every tensor of the model (initializers and attribute tensors, subgraphs too) stored externally."""
    return [t for t in edh._get_all_tensors(proto) if edh.uses_external_data(t)]


#: Longest decimal ``offset`` / ``length`` accepted (2**64 has 20 digits).
_MAX_DIGITS = 20


def external_info(t: onnx.TensorProto, model_path: Path) -> tuple[str, int, int | None]:
    """``(location, offset, length)`` of an external tensor, each field checked.

    ``onnx.external_data_helper.ExternalDataInfo`` calls ``int()`` on the strings of the file
    (a traceback on ``"abc"``, a negative offset, or a 100,000-digit number) and passes a NUL byte
    in ``location`` on to the OS; this parser refuses them naming the tensor and the field.

    Raises
    ------
    ModelError
        ``offset`` or ``length`` is not a whole number >= 0, or ``location`` is empty or holds a
        NUL byte.
    """
    fields = {e.key: e.value for e in t.external_data}
    where = f"{model_path}: tensor '{t.name}' external data"
    loc = fields.get("location", "")
    if not loc:
        raise ModelError(f"{where} has no location.", hint=_REEXPORT)
    if "\x00" in loc:
        raise ModelError(f"{where} field 'location' holds a NUL byte ({loc!r}).", hint=_REEXPORT)
    numbers: dict[str, int | None] = {}
    for key in ("offset", "length"):
        text = fields.get(key)
        if text is None or text == "":
            numbers[key] = None
            continue
        if not (text.isascii() and text.isdigit()) or len(text) > _MAX_DIGITS:
            shown = text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"
            raise ModelError(f"{where} field '{key}' is {shown!r}, not a whole number of bytes >= 0.",
                             hint=_REEXPORT)
        numbers[key] = int(text)
    return loc, numbers["offset"] or 0, numbers["length"]


def load_external_data(proto: onnx.ModelProto, model_path: Path) -> list[str]:
    """Check and load the external data of ``proto`` from the folder of ``model_path``.

    Every location and length is checked; the big initializers of a model whose external data
    reaches ``external.LAZY_MODEL_BYTES`` are then left on disk (lazy), the others are read.

    Returns
    -------
    list of str
        Names of the external data files read, relative to the model folder.

    Raises
    ------
    ModelError
        A location is absolute, escapes the model folder (``..`` or a symlink), is missing or
        shorter than ``offset + length``.
    """
    tensors = external_tensors(proto)
    if not tensors:
        return []
    base = model_path.parent
    # Allowed: the model's folder, and the real folder of the model file when it is a symlink
    # (Hugging Face cache: snapshots/<rev>/model.onnx -> blobs/<hash>, data likewise).
    roots = {os.path.realpath(base), os.path.dirname(os.path.realpath(model_path))}
    files: dict[str, int] = {}
    for t in tensors:
        loc, offset, length = external_info(t, model_path)
        where = f"{model_path}: tensor '{t.name}' stores its data in '{loc}'"
        if os.path.isabs(loc) or Path(loc).drive or loc.startswith(("/", "\\")):
            raise ModelError(f"{where}, an absolute path; external data must lie in the model's folder.",
                             hint=f"Move the data file next to the model and re-save with location='{Path(loc).name}'.")
        real = os.path.realpath(os.path.join(base, loc))  # follows symlinks
        if not any(os.path.commonpath([real, root]) == root for root in roots):
            raise ModelError(f"{where}, which resolves outside the model's folder {base} "
                             "('..' or a symlink); refusing to read it.",
                             hint="Copy the data file into the model's folder and re-save the model.")
        if not os.path.isfile(real):
            raise ModelError(f"{where}, but the data file {base / loc} is missing.",
                             hint="Copy the .data file next to the .onnx file (same folder, same name).")
        size = files.setdefault(loc, os.path.getsize(real))
        end = offset + (length if length is not None else 0)
        if end > size:
            raise ModelError(f"{where}: the data file {base / loc} has {size} bytes but the tensor ends at byte "
                             f"{end}; the data file is truncated or belongs to another model.",
                             hint="Copy the complete .data file saved with this model.")
    _keep_big_on_disk(proto, base, sum(_length(t) for t in tensors))
    handles: dict[str, object] = {}
    try:
        for t in tensors:
            if external.lazy_file(t):
                continue
            loc, offset, length = external_info(t, model_path)
            f = handles.get(loc)
            if f is None:
                f = handles[loc] = open(os.path.realpath(os.path.join(base, loc)), "rb")  # noqa: SIM115
            f.seek(offset)
            data = f.read(length) if length is not None else f.read()
            del t.external_data[:]
            t.data_location = onnx.TensorProto.DEFAULT
            t.raw_data = data
            del data  # free this tensor's bytes before the next one is read (multi-GiB models)
    except OSError as exc:
        raise ModelError(f"{model_path}: cannot read external data ({one_line(exc)}).",
                         hint="Copy the .data file saved with this model next to it.") from None
    finally:
        for f in handles.values():
            f.close()
    return sorted(files)


def _length(t: onnx.TensorProto) -> int:
    length = {e.key: e.value for e in t.external_data}.get("length", "")
    return int(length) if length.isdigit() else 0


def _keep_big_on_disk(proto: onnx.ModelProto, base: Path, total: int) -> None:
    """Leave the big main-graph initializers of a model with large external data on disk
    (:mod:`workbench.core.io.external`); their locations were checked by the caller."""
    if total < external.LAZY_MODEL_BYTES:
        return
    for t in proto.graph.initializer:
        if external.eligible(t):
            loc = {e.key: e.value for e in t.external_data}["location"]
            external.keep_lazy(t, os.path.realpath(os.path.join(base, loc)))
