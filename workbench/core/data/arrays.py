"""Array files as data: ``.npz`` (one array per input), ``.npy`` (single-input models) and a
folder of such files.

Layouts of an array (``shared/corpus/README.md``):

- ``batch``: axis 0 is the model's batch axis; with N rows a sample is ``a[i:i+1]`` (or
  ``a[i*k:(i+1)*k]`` when the model fixes the batch to k). Array rank == input rank.
- ``stacked``: row i is exactly one feed ``a[i]``. Array rank == input rank + 1.
- ragged keys ``<input>::<i>`` are single samples, fed as stored (``shared/cases/_kit.py``).

Keys starting with ``gt_`` are labels, not inputs. Only array headers are read when the file
is opened (shape and dtype are checked then); rows are read as samples are iterated, and only as
many as are asked for (:mod:`workbench.core.data.npy_rows`: ``.npy`` files and stored ``.npz`` members
memory-mapped, deflated ``.npz`` members streamed), so memory holds one batch, not the file. Each pass over
the data reads again.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from workbench.core.data.base import DataSource
from workbench.core.data.npy_rows import RowReader, read_member
from workbench.core.data.validate import (
    cast,
    check_dtype,
    check_shape,
    check_symbols,
    fmt_shape,
    one_line,
)
from workbench.core.errors import DataError
from workbench.core.model.load import PreparedModel
from workbench.core.wording import count

LAYOUTS = ("auto", "batch", "stacked")
#: What numpy / zipfile raise on damaged files (zlib.error for corrupt deflate streams,
#: NotImplementedError/RuntimeError for unsupported or encrypted zip members).
_READ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, NotImplementedError,
                RuntimeError)
_RAGGED = re.compile(r"^(.*)::(\d+)$")


def read_headers(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of every array in an .npz or .npy file, without reading the data.

    Raises
    ------
    DataError
        The file is missing or not a readable .npy/.npz.
    """
    if not path.is_file():
        raise DataError(f"{path}: no such data file.", hint="Check the path.")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: the file is empty (0 bytes).",
                        hint="Its save was interrupted or it is the wrong file: save the data again with numpy.savez "
                             "/ numpy.save.")
    try:
        if path.suffix.lower() == ".npy":
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
            return {"": (tuple(arr.shape), arr.dtype)}
        out = {}
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                              else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = reader(f)
                out[info.filename[:-4]] = (tuple(shape), np.dtype(dtype))
        return out
    except PermissionError as exc:  # the file is fine: the user may not read it
        raise DataError(f"{path}: cannot be read ({exc.strerror}).", hint="Check the file permissions.") from None
    except _READ_ERRORS as exc:
        raise DataError(f"{path}: not a readable .npz/.npy file ({one_line(exc)}).",
                        hint="Save the data with numpy.savez / numpy.save (no pickled objects).") from None


class ArrayFileSource(DataSource):
    """Samples from one ``.npz`` or ``.npy`` file."""

    kind = "npz"

    def __init__(self, model: PreparedModel, path: str | Path, layout: str = "auto") -> None:
        super().__init__(model)
        self.path = Path(path)
        if layout not in LAYOUTS:
            raise DataError(f"{self.path}: unknown npz layout {layout!r}.", hint="Use 'batch', 'stacked' or 'auto'.")
        self.requested_layout = layout
        self.kind = "npy" if self.path.suffix.lower() == ".npy" else "npz"
        headers = read_headers(self.path)
        if self.kind == "npy":
            headers = self._npy_key(headers)
        self._keys, self._ragged, self._labels = self._split_keys(headers)
        self.layout = self._detect_layout(headers)
        self._count, self._unit = self._check(headers)

    # -- opening ------------------------------------------------------------------------------
    def _npy_key(self, headers):
        if len(self.inputs) != 1:
            names = ", ".join(i.name for i in self.inputs)
            raise DataError(f"{self.path} holds one array but the model has {len(self.inputs)} inputs ({names}).",
                            hint="Use an .npz file with one array per input name.")
        return {self.inputs[0].name: headers[""]}

    def _split_keys(self, headers):
        names = {i.name for i in self.inputs}
        keys, ragged, labels = {}, {}, []
        for key in headers:
            m = _RAGGED.match(key)
            if key in names:
                keys[key] = key
            elif key.startswith("gt_"):
                labels.append(key)
            elif m and m.group(1) in names:
                ragged.setdefault(m.group(1), {})[int(m.group(2))] = key
            else:
                self.notes.append(f"{self.path}: array '{key}' is not a model input; ignored.")
        for inp in self.inputs:
            if inp.name not in keys and inp.name not in ragged:
                found = ", ".join(sorted(headers)) or "none"
                raise DataError(f"{self.path.name} has no array for input '{inp.name}'; arrays found: {found} "
                                f"(file {self.path}).",
                                hint=f"Save one array per model input ({', '.join(i.name for i in self.inputs)}); "
                                     "keys starting with gt_ are labels.")
        return keys, ragged, labels

    def _detect_layout(self, headers) -> str:
        if self.requested_layout != "auto":
            return self.requested_layout
        votes = {}
        for name, key in self._keys.items():
            inp = self._input(name)
            ndim = len(headers[key][0])
            if not inp.has_shape:
                continue
            if ndim == len(inp.shape) + 1:
                votes[name] = "stacked"
            elif ndim == len(inp.shape) and ndim > 0:
                votes[name] = "batch"
            else:
                raise DataError(f"{self.path}: array '{key}' for input '{name}' has shape {fmt_shape(headers[key][0])} "
                                f"(rank {ndim}); the model input is {fmt_shape(inp.shape)} (rank {len(inp.shape)}), "
                                f"so the array must have rank {len(inp.shape)} (batch layout) or "
                                f"{len(inp.shape) + 1} (stacked layout).",
                                hint="Reshape the array, or save each sample under its own key '<input>::<i>'.")
        kinds = set(votes.values())
        if len(kinds) > 1:
            detail = ", ".join(f"'{k}' looks {v}" for k, v in votes.items())
            raise DataError(f"{self.path}: arrays mix layouts ({detail}).",
                            hint="Store every array in one layout, or open with {'kind': 'npz', 'layout': ...}.")
        layout = kinds.pop() if kinds else "stacked"
        if self._keys:
            self.notes.append(f"{self.path}: npz layout '{layout}' (detected from array ranks).")
        return layout

    def _check(self, headers) -> tuple[int, dict[str, int]]:
        counts: dict[str, int] = {}
        unit: dict[str, int] = {}
        for name, key in self._keys.items():
            inp = self._input(name)
            shape, dtype = headers[key]
            if self.layout == "stacked":
                if not shape:
                    raise DataError(f"{self.path}: array '{key}' for input '{name}' is a scalar; the stacked layout "
                                    "needs one row per sample.", hint="Save an array of shape (N, *feed_shape).")
                check_shape(shape[1:], inp, str(self.path), key)
                counts[name] = shape[0]
            else:
                if not shape:
                    raise DataError(f"{self.path}: array '{key}' for input '{name}' is a scalar; the batch layout "
                                    "needs the batch axis first.", hint="Use the stacked layout for scalar inputs.")
                k = self._unit_of(name)
                feed_shape = (k,) + tuple(shape[1:])
                check_shape(feed_shape, inp, str(self.path), key)
                if shape[0] % k:
                    raise DataError(f"{self.path}: array '{key}' has {shape[0]} rows but input '{name}' has a fixed "
                                    f"batch of {k}.", hint=f"Store a multiple of {k} rows.")
                counts[name], unit[name] = shape[0] // k, k
            self._note_dtype(dtype, inp, key)
        check_symbols({name: self._feed_shape(name, headers) for name in self._keys}, self.inputs, str(self.path))
        for name, items in self._ragged.items():
            if sorted(items) != list(range(len(items))):
                raise DataError(f"{self.path}: ragged keys for input '{name}' are not numbered 0..{len(items) - 1} "
                                f"(found {sorted(items)[:8]}).", hint="Number ragged samples '<input>::0', '::1', ...")
            for i, key in items.items():
                shape, dtype = headers[key]
                check_shape(shape, self._input(name), f"{self.path} (sample {i})", key)
                self._note_dtype(dtype, self._input(name), key)
            counts[name] = len(items)
        if len(set(counts.values())) > 1:
            detail = ", ".join(f"'{k}': {v}" for k, v in counts.items())
            raise DataError(f"{self.path}: inputs have different sample counts ({detail}).",
                            hint="Store the same number of samples for every input.")
        n = next(iter(counts.values()), 0)
        if n == 0:
            detail = ", ".join(f"'{k}'" for k in counts) or "no input"
            raise DataError(f"{self.path}: holds zero samples (arrays for {detail} have 0 rows).",
                            hint="Save at least one sample per input.")
        return n, unit

    def _feed_shape(self, name, headers) -> tuple[int, ...]:
        shape = headers[self._keys[name]][0]
        return tuple(shape[1:]) if self.layout == "stacked" else (self._unit_of(name),) + tuple(shape[1:])

    def _unit_of(self, name) -> int:
        inp = self._input(name)
        return inp.shape[0] if inp.has_shape and isinstance(inp.shape[0], int) and inp.shape[0] > 0 else 1

    def _note_dtype(self, dtype, inp, key) -> None:
        note = check_dtype(dtype, inp, str(self.path), key)
        if note:
            self.notes.append(f"{self.path}: {note}")

    def _input(self, name: str):
        return next(i for i in self.inputs if i.name == name)

    # -- reading ------------------------------------------------------------------------------
    def _readers(self) -> dict[str, RowReader]:
        """One :class:`RowReader` per input array (caller closes them)."""
        readers: dict[str, RowReader] = {}
        try:
            for name, key in self._keys.items():
                readers[name] = RowReader(self.path, None if self.kind == "npy" else key)
        except _READ_ERRORS as exc:
            for r in readers.values():
                r.close()
            raise DataError(f"{self.path}: cannot read the arrays ({one_line(exc)}).",
                            hint="Re-save the data with numpy.savez.") from None
        return readers

    def _member(self, key: str) -> np.ndarray:
        try:
            return read_member(self.path, key)
        except _READ_ERRORS as exc:
            raise DataError(f"{self.path}: cannot read array '{key}' ({one_line(exc)}).",
                            hint="Re-save the data with numpy.savez.") from None

    def num_samples(self) -> int:
        return self._count

    def labels(self) -> dict[str, np.ndarray]:
        return {k: self._member(k) for k in self._labels}

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        """Samples in order; each array is read only as far as the caller iterates (see npy_rows)."""
        readers = self._readers()
        try:
            for i in range(self._count):
                feed = {}
                for name, reader in readers.items():
                    try:
                        feed[name] = reader.take(1)[0] if self.layout == "stacked" else reader.take(self._unit[name])
                    except _READ_ERRORS as exc:
                        raise DataError(f"{self.path}: cannot read sample {i} of '{self._keys[name]}' "
                                        f"({one_line(exc)}).", hint="Re-save the data with numpy.savez.") from None
                for name, items in self._ragged.items():
                    feed[name] = self._member(items[i])
                yield self._cast(feed)
        finally:
            for r in readers.values():
                r.close()

    def _cast(self, feed):
        return {inp.name: cast(np.asarray(feed[inp.name]), inp, str(self.path)) for inp in self.inputs}

    def to_json(self) -> dict:
        spec = {"kind": self.kind, "path": str(self.path)}
        if self.requested_layout != "auto":
            spec["layout"] = self.requested_layout
        return spec


class ArrayFolderSource(DataSource):
    """Samples from every ``.npz`` / ``.npy`` file of a folder, in file-name order."""

    kind = "folder"

    def __init__(self, model: PreparedModel, path: str | Path, layout: str = "auto") -> None:
        super().__init__(model)
        self.path = Path(path)
        self.layout = layout
        if not self.path.is_dir():
            raise DataError(f"{self.path}: no such folder.", hint="Check the path.")
        files = sorted(p for p in self.path.iterdir() if p.suffix.lower() in (".npz", ".npy") and p.is_file())
        if not files:
            raise DataError(f"{self.path}: the folder holds no .npz or .npy files.",
                            hint="Put one .npz per sample (or per batch) in it, or use {'kind': 'images', ...}.")
        self.files = [ArrayFileSource(model, f, layout) for f in files]
        for f in self.files:
            self.notes.extend(n for n in f.notes if "layout" not in n)
        if len(self.files) > 1:  # a calib.npz beside an eval.npz: every row of both is read
            shown = ", ".join(f"{f.path.name} ({count(f.num_samples() or 0, 'row')})" for f in self.files[:6])
            more = f" and {len(self.files) - 6} more" if len(self.files) > 6 else ""
            self.notes.append(f"{self.path}: reading {len(self.files)} files in name order: {shown}{more}; give one "
                              "file instead of the folder to use only its rows.")

    def num_samples(self) -> int:
        return sum(f.num_samples() for f in self.files)

    def labels(self) -> dict[str, np.ndarray]:
        parts = [f.labels() for f in self.files]
        keys = set().union(*parts) if parts else set()
        return {k: np.concatenate([p[k] for p in parts if k in p]) for k in sorted(keys)}

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        for f in self.files:
            yield from f._iter_samples()

    def to_json(self) -> dict:
        spec = {"kind": "folder", "path": str(self.path)}
        if self.layout != "auto":
            spec["layout"] = self.layout
        return spec
