"""Atomic model saving, with external data for models over the 2 GiB protobuf limit.

The model (and its ``<name>.data`` file when external) is written into a hidden temporary folder
in the target directory and moved into place with ``os.replace``, so a crash never leaves a half
written file and a second save to the same path replaces the ``.data`` file instead of
appending to it (``onnx.save`` appends external tensors to an existing file).

A model with external data is two files, and two renames are not one atomic step. So that a kill
between them never pairs the old ``.onnx`` with the new ``.data`` (wrong weights, or a
"truncated" data file), the switch goes through a hidden data file:

1. the new data is moved in as ``.<name>.<random>.data`` (hidden) -- the old pair is untouched;
2. ``<name>`` is replaced by a model that reads the hidden file -- the new pair is complete;
3. ``<name>.data`` is replaced by a copy of the hidden file (onnx refuses hard-linked data);
4. ``<name>`` is replaced by the model that reads ``<name>.data``; the hidden file is removed.

After a kill at any point the final names hold one complete version; the hidden leftovers of an
interrupted save are removed by the next save to the same path (and by the app, :func:`workbench.core.io.atomic.clean_killed_write`,
when it killed the save). A step that fails instead (disk full, ...) leaves the folder as it was: the files
are written in a temporary folder first, and a failure after step 1 removes the hidden file and, before
step 3, puts the previous model back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

import onnx
from google.protobuf.message import EncodeError

from workbench.core.errors import ExportError, checker_line
from workbench.core.io.atomic import (
    _explain,
    check_not_input,
    check_regular,
    remove_save_temp,
    save_prefix,
    save_temps,
    stale_temps,
    write_pieces,
)
from workbench.core.io.external import inline_copy, is_source, lazy_file, tensor_chunks
from workbench.core.io.model_pieces import split_model
from workbench.core.io.tensor_bytes import copy_fields, model_tensor_bytes, tensor_nbytes

log = logging.getLogger(__name__)

#: Models whose tensor bytes exceed this are saved with external data (protobuf limit 2 GiB).
EXTERNAL_THRESHOLD = 2**31 - 2**26
#: The most bytes protobuf parses as one message: a larger ``.onnx`` file cannot be loaded.
PROTOBUF_LIMIT = 2**31 - 1


def tensor_bytes(proto: onnx.ModelProto) -> int:
    """Bytes held in initializers of every graph, from dims and types (reading ``raw_data``
    would copy each tensor; see :mod:`workbench.core.io.tensor_bytes`)."""
    return model_tensor_bytes(proto)


def _remove_leftovers(path: Path) -> None:
    """Delete hidden temporaries of earlier interrupted saves to ``path`` (best effort), except a
    hidden data file the current model still reads (a save killed between steps 2 and 4)."""
    for p in stale_temps(path):  # an atomic_path temp of ours
        if p.is_file() and not p.is_symlink():
            with contextlib.suppress(OSError):
                p.unlink()
    for p in save_temps(path):
        remove_save_temp(path, p)


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _relocate(model_file: Path, location: str) -> None:
    """Point every external tensor of the (small, data-less) ``model_file`` at ``location``."""
    from onnx import external_data_helper as edh

    m = onnx.load(str(model_file), load_external_data=False)
    for t in edh._get_all_tensors(m):
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    model_file.write_bytes(m.SerializeToString())
    _fsync(model_file)


def _stream_initializers(proto: onnx.ModelProto, data_file: Path, location: str, threshold: int) -> onnx.ModelProto:
    """Copy of ``proto`` whose main-graph initializers of ``threshold`` bytes or more (``raw_data``
    ones, as ``onnx.save_model`` picks them) and lazy ones (still in the user's data file, see
    :mod:`workbench.core.io.external`) are written to ``data_file`` one at a time and replaced by
    references to ``location``. ``proto`` is not modified and no second copy of the weights is
    made."""
    out = onnx.ModelProto()
    copy_fields(proto, out, ("graph",))
    copy_fields(proto.graph, out.graph, ("initializer",))
    offset = 0
    with open(data_file, "wb") as f:
        for t in proto.graph.initializer:
            if not lazy_file(t) and not (t.HasField("raw_data") and tensor_nbytes(t) >= threshold):
                out.graph.initializer.append(t)
                continue
            ref = out.graph.initializer.add(name=t.name, data_type=t.data_type, dims=t.dims, doc_string=t.doc_string)
            length = 0
            for piece in tensor_chunks(t):  # bytes of one tensor (or a 64 MiB piece of a lazy one)
                write_pieces(f, piece)
                length += len(piece)
                del piece
            ref.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
                ref.external_data.add(key=k, value=v)
            offset += length
    return out


def check_file(path: Path) -> None:
    """``onnx.checker`` on the written file (any size: by path, external data included), before it
    replaces anything.

    Raises
    ------
    ExportError
        The file fails the checker (names the file and the checker's reason).
    """
    _check(str(path))


def check_bytes(data: bytes) -> None:
    """``onnx.checker`` on the serialised model ``data`` (one file without external data, under
    2 GiB): the bytes about to be written, checked without reading the file back and parsing it
    again. Raises ExportError as :func:`check_file` does."""
    _check(data)


def _check(model: str | bytes) -> None:
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:
        raise ExportError(f"The written model fails onnx.checker: {checker_line(str(exc))}",
                          hint="Report this as a Workbench bug with the model and recipe.",
                          details=str(exc).strip()) from None


def _save_inline(proto: onnx.ModelProto, target: Path) -> None:
    """Write ``proto`` (lazy weights read in) to ``target`` as one file: serialised once, checked
    (:func:`check_bytes`), then written and synced. These are the bytes ``onnx.save_model`` writes
    (``SerializeToString``'s); a model of minilm_l6_v2's size (58 MB) saved through ``onnx.save_model``
    and checked by path was parsed a second time from the file. A model with large weights is
    serialised in pieces (:func:`~workbench.core.io.model_pieces.split_model`: the same bytes, its
    weights not joined into one buffer) and checked with each large weight a one-element stand-in (their
    ``raw_data`` lengths checked here, as onnx.checker would). Written in 64 KiB calls
    (:func:`~workbench.core.io.atomic.write_pieces`). A model over :data:`PROTOBUF_LIMIT` bytes (saved
    without external data although its weights are near 2 GiB) is refused: no file could load it."""
    model = inline_copy(proto)
    pieces = split_model(model)
    if pieces is None:
        try:
            parts = [model.SerializeToString()]
        except EncodeError:  # upb: a message over 2 GiB
            raise _too_large(target, None) from None  # ByteSize() fails there too
    else:
        parts = pieces.parts
    if sum(map(len, parts)) > PROTOBUF_LIMIT:
        raise _too_large(target, sum(map(len, parts)))
    if pieces is None:
        check_bytes(parts[0])
    else:
        check_bytes(pieces.checkable)
        if pieces.short:
            name, held, need = pieces.short[0]
            raise ExportError(f"The written model fails onnx.checker: TensorProto (tensor name: {name}) raw_data "
                              f"size ({held} bytes) is too small for the declared shape and type ({need} bytes "
                              "required).", hint="Report this as a Workbench bug with the model and recipe.")
    del model, pieces
    parts.reverse()
    with open(target, "wb") as f:
        while parts:
            write_pieces(f, parts.pop())  # each piece freed once written
        f.flush()
        os.fsync(f.fileno())


class _TooLarge(ExportError):
    """A model over :data:`PROTOBUF_LIMIT` bytes asked to be one file."""


def _too_large(target: Path, size: int | None) -> ExportError:
    """The error for a model of ``size`` bytes (None: unknown, over 2 GiB) saved as one file (only when the
    caller asked for one file: ``save_model(external=None)`` writes such a model with external data)."""
    what = "over 2 GiB" if size is None else f"{size} bytes ({size / 2**30:.2f} GiB)"
    return _TooLarge(f"{target.name}: the model is {what}, more than one .onnx file can hold ({PROTOBUF_LIMIT} "
                     "bytes, protobuf's limit); nothing was written.",
                     hint=f"Write it as two files, {target.name} and its weights in {target.name}.data beside it: "
                          "workbench-cli quantize / convert and the app's export do so on their own for a model "
                          "this large (in Python: leave save_model's external unset).")


def _save_external(proto: onnx.ModelProto, path: Path, tmp: Path, threshold: int) -> None:
    """Write ``proto`` as ``path`` + ``path.data`` through the hidden data file (module docstring). Every file
    is written, checked and synced in ``tmp`` first, so the steps in the target's folder are renames and one
    copy. When a step fails (an OSError: disk full while copying the data, ...) the folder is put back as it
    was: the previous model is renamed back (kept as a hard link in ``tmp`` before step 2) while the previous
    ``NAME.data`` is still in place, and the hidden data file is removed; only a failure of the last rename
    leaves the new pair reading the hidden file (complete; the next save removes it)."""
    folder = path.parent
    data_name = path.name + ".data"
    hidden = f"{save_prefix(path)}{os.urandom(6).hex()}.data"  # random as secrets.token_hex (no hmac/OpenSSL)
    lean = _stream_initializers(proto, tmp / hidden, hidden, threshold)
    # subgraph initializers (copied with the nodes) go after the streamed ones, by onnx itself
    onnx.save_model(lean, str(tmp / path.name), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=hidden, size_threshold=threshold)
    del lean
    check_file(tmp / path.name)
    if os.path.getsize(tmp / hidden) == 0:  # every tensor under the threshold: one self-contained file
        (tmp / hidden).unlink()
        _fsync(tmp / path.name)
        os.replace(tmp / path.name, path)
        return
    final = tmp / (path.name + ".final")
    shutil.copyfile(tmp / path.name, final)
    _relocate(final, data_name)  # the model of step 4, ready before anything in the folder changes
    _fsync(tmp / hidden)
    _fsync(tmp / path.name)
    existed, old = os.path.lexists(path), _keep_previous(path, tmp)
    os.replace(tmp / hidden, folder / hidden)                 # 1. new data, hidden
    step = 1
    try:
        os.replace(tmp / path.name, path)                     # 2. model -> hidden data
        step = 2
        copied = tmp / data_name  # a copy, not a hard link: onnx refuses data files with several links
        shutil.copyfile(folder / hidden, copied)
        _fsync(copied)
        os.replace(copied, folder / data_name)                # 3. <name>.data = new data
        step = 3
        os.replace(final, path)                               # 4. model -> <name>.data
        step = 4
    finally:
        if step == 2 and not _restore_previous(path, old, existed):
            step = 3  # the new model stays, reading the hidden data file
        if step != 3:  # unreferenced now (step 3: the model in place reads it)
            with contextlib.suppress(OSError):
                (folder / hidden).unlink()


def _keep_previous(path: Path, tmp: Path) -> Path | None:
    """A hard link in ``tmp`` to the model now at ``path`` (None when there is none or the file system
    cannot link): what step 2 replaces, put back if step 3 fails."""
    if not os.path.lexists(path):
        return None
    old = tmp / (path.name + ".previous")
    try:
        os.link(path, old, follow_symlinks=False)
    except OSError:
        return None
    return old


def _restore_previous(path: Path, old: Path | None, existed: bool) -> bool:
    """After step 3 failed: put the previous model (``old``) back at ``path``, or remove the new one when
    there was none (``existed`` False). False when neither could be done: the new model stays, reading the
    hidden data file. Never raises."""
    try:
        if old is not None:
            os.replace(old, path)
        elif not existed:
            path.unlink()
        else:
            return False
    except OSError:
        return False
    return True


def _check_targets(path: Path, folder: Path, external: bool) -> None:
    """Refuse ``path`` and (``external``) its data file when one is an input, an open model's data file, or
    exists and is not a regular file."""
    for target in (path, folder / (path.name + ".data")):
        check_not_input(target)
        if target == path or external:  # a FIFO, a folder, a device (/dev/null as root): the rename would replace it
            check_regular(target)
        if is_source(target):
            raise ExportError(f"{path}: would replace {target.name}, the external data file an open model reads "
                              "its weights from.", hint="Choose another file name for the quantized model.")


def save_model(proto: onnx.ModelProto, path: str | Path, *, external: bool | None = None) -> Path:
    """Write ``proto`` to ``path`` atomically; ``proto`` is not modified.

    With external data the main graph's initializers are streamed to the data file one at a
    time (weights still in the user's data file are copied from it in 64 MiB pieces), so saving
    needs about one tensor's bytes on top of ``proto``.

    Parameters
    ----------
    proto : onnx.ModelProto
    path : str or Path
        Target ``.onnx`` file. External data goes to ``<path name>.data`` beside it.
    external : bool or None
        Force external data on/off; None = when tensors exceed ~2 GiB, or the model as one file would be over
        protobuf's 2 GiB limit.

    Returns
    -------
    Path
        The written model path.

    Raises
    ------
    ExportError
        If the folder does not exist or is not writable, the model is over 2 GiB and ``external`` is False, the disk is full, the target (or, with external
        data, its data file) exists and is not a regular file (a FIFO, a folder, a device), or the target's
        data file is one an open model reads its weights from (:mod:`workbench.core.io.external`).
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ExportError(f"{path}: folder {folder} does not exist.", hint="Create it or choose another path.")
    use_external = tensor_bytes(proto) > EXTERNAL_THRESHOLD if external is None else external
    _check_targets(path, folder, use_external)
    _remove_leftovers(path)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=save_prefix(path), dir=folder))
    except OSError as exc:
        raise _explain(path, exc) from None
    try:
        if not use_external:
            try:
                _save_inline(proto, tmp / path.name)  # lazy weights read in (< 2 GiB)
            except _TooLarge:
                if external is not None:
                    raise
                use_external = True  # over protobuf's limit although its weights are under the threshold
                _check_targets(path, folder, use_external)
            else:
                os.replace(tmp / path.name, path)
        if use_external:
            _save_external(proto, path, tmp, 0 if external else 1024)
    except OSError as exc:
        raise _explain(path, exc) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _remove_leftovers(path)  # hidden data a killed earlier save left in use is unreferenced now
    log.info("saved %s%s", path, f" (+ {path.name}.data)" if use_external else "")
    return path
