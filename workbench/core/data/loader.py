"""Calibration and evaluation data: one entry point, :func:`open_data`.

Spec forms (``str``/``Path`` or a JSON-safe dict, as stored in a project file):

- ``"calib.npz"`` / ``{"kind": "npz", "path": ..., "layout": "auto"|"batch"|"stacked"}``: one
  array per input name (``gt_*`` keys are labels; ``<input>::<i>`` keys are ragged samples);
- ``"x.npy"`` / ``{"kind": "npy", "path": ...}``: single-input models;
- a folder of .npz/.npy files (``{"kind": "folder", "path": ...}``); a folder holding only
  images opens as ``images`` with default preprocessing (see the notes);
- ``{"kind": "images", "path": DIR, "size": [H, W], "layout": "NCHW"|"NHWC",
  "channel_order": "RGB"|"BGR", "mean": [...], "std": [...], "scale": 1/255, "input": name,
  "resize": "stretch"|"letterbox"|"center_crop", "pad_value": 114}``;
- ``{"kind": "python", "path": FILE, "allow_code": true}`` (runs the file's ``samples()``);
- ``{"kind": "random", "count": N, "seed": 0, "dims": {"sequence": 32}}``.

A dict without ``kind`` but with ``path`` takes its kind from the path (suffix or folder content).

Every source yields feeds validated against the model (rank, fixed dims, dtype) and raises
:class:`~workbench.core.errors.DataError` naming the file and the tensor otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.core.data.arrays import ArrayFileSource, ArrayFolderSource
from workbench.core.data.base import DataSource
from workbench.core.data.images import ImageFolderSource, list_images
from workbench.core.data.pyreader import PythonReaderSource
from workbench.core.data.randomdata import RandomSource
from workbench.core.errors import DataError
from workbench.core.model.load import PreparedModel
from workbench.core.model.reader import sniff_format, text_start
from workbench.core.wording import plural

__all__ = ["DataSource", "open_data", "data_kind", "KINDS", "OPTIONS"]

#: each data spec kind -> the options its spec may hold besides ``kind``
OPTIONS = {
    "npz": ("path", "layout"),
    "npy": ("path", "layout"),
    "folder": ("path", "layout"),
    "images": ("path", "size", "layout", "channel_order", "mean", "std", "scale", "input", "resize", "pad_value"),
    "python": ("path", "allow_code"),
    "random": ("count", "seed", "dims", "int_high"),
}
KINDS = tuple(OPTIONS)


def open_data(spec: str | Path | dict, model: PreparedModel) -> DataSource:
    """Open a data source for ``model``.

    Parameters
    ----------
    spec : str, Path or dict
        A path (.npz, .npy or folder) or a dict with ``kind`` (see the module docstring).
    model : PreparedModel
        The model whose inputs the feeds must match.

    Returns
    -------
    DataSource
        ``num_samples()``, ``batches(batch_size)``, ``samples(limit)``, ``labels()``, ``to_json()``.

    Raises
    ------
    DataError
        Unknown kind or option, missing/unreadable file, an array missing for an input, wrong
        rank, fixed dim or dtype, zero samples, a Python reader without ``allow_code``.
    """
    if isinstance(spec, (str, Path)):
        return _open_path(Path(spec), model)
    if not isinstance(spec, dict):
        raise DataError(f"data spec must be a path or a dict, got {type(spec).__name__}.",
                        hint="E.g. \"calib.npz\" or {\"kind\": \"random\", \"count\": 8}.")
    kind = spec.get("kind")
    if kind is None and spec.get("path"):
        spec = dict(spec, kind=data_kind(spec["path"]))
        kind = spec["kind"]
    if kind not in OPTIONS:
        raise DataError(f"data spec has unknown kind {kind!r}.", hint=f"Use one of: {', '.join(KINDS)}.")
    unknown = sorted(set(spec) - set(OPTIONS[kind]) - {"kind"})
    if unknown:
        raise DataError(f"data spec of kind '{kind}' has unknown {plural(len(unknown), 'option')} {', '.join(unknown)}.",
                        hint=f"Options of '{kind}': {', '.join(OPTIONS[kind])}.")
    if kind != "random" and not spec.get("path"):
        raise DataError(f"data spec of kind '{kind}' needs a 'path'.", hint="Add \"path\": \"...\".")
    kw = {k: v for k, v in spec.items() if k != "kind"}
    if kind in ("npz", "npy"):
        return ArrayFileSource(model, kw.pop("path"), kw.get("layout", "auto"))
    if kind == "folder":
        return ArrayFolderSource(model, kw.pop("path"), kw.get("layout", "auto"))
    if kind == "images":
        return ImageFolderSource(model, kw.pop("path"), **kw)
    if kind == "python":
        return PythonReaderSource(model, kw.pop("path"), kw.get("allow_code", False))
    return RandomSource(model, **kw)


def _open_path(path: Path, model: PreparedModel) -> DataSource:
    if path.is_dir():
        if any(p.suffix.lower() in (".npz", ".npy") for p in path.iterdir()):
            return ArrayFolderSource(model, path)
        if list_images(path):
            src = ImageFolderSource(model, path)
            src.notes.append(f"{path}: opened as images with default preprocessing (size {list(src.size)}, "
                             f"{src.layout}, RGB, x/255, no mean/std); declare it with {{'kind': 'images', ...}} "
                             "if the model expects something else.")
            return src
        raise DataError(f"{path}: the folder holds no .npz, .npy or image files.", hint="Check the path.")
    suffix = path.suffix.lower()
    if suffix in (".npz", ".npy"):
        return ArrayFileSource(model, path)
    if suffix == ".py":
        raise DataError(f"{path}: a Python reader must be opened explicitly because it runs code.",
                        hint=f"On the command line add --allow-code (in the app: tick Allow code); from Python "
                             f"pass {{\"kind\": \"python\", \"path\": \"{path}\", \"allow_code\": True}}.")
    if not path.exists():
        raise DataError(f"{path}: no such data file or folder.", hint="Check the path.")
    refuse_model_as_data(path)
    raise DataError(f"{path}: unsupported data file type '{suffix}'.",
                    hint="Use .npz (one array per input), .npy, a folder of them, or a folder of images.")


def refuse_model_as_data(path: str | Path) -> None:
    """Refuse an ONNX model or a Workbench project (by suffix) given as data (``--data MODEL.onnx``: the
    arguments are mixed up), before any model is loaded; return for anything else.

    Raises
    ------
    DataError
        Naming the file, what it is and what data is.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in (".onnx", ".wbproj") or Path(path).is_dir():
        return
    what = "an ONNX model" if suffix == ".onnx" else "a Workbench project"
    other = _not_a_model(path) if suffix == ".onnx" else None
    if other:  # named by its content, not its suffix ("--data notes.onnx" holding text)
        raise DataError(f"{path} is {other}, neither data nor an ONNX model: the data is an .npz (one array per "
                        "input), .npy, a folder of them, or a folder of images.",
                        hint="Give --data (or --eval) a data file.")
    raise DataError(f"{path} is {what}, not data: the data is an .npz (one array per input), .npy, a folder of "
                    "them, or a folder of images.",
                    hint="Give --data (or --eval) a data file; models are the command's positional arguments.")


def _not_a_model(path: str | Path) -> str | None:
    """What the first bytes of the file ``path`` (named .onnx) hold when they are text or another known format
    ("a text file (its first line: 'hello')", "a Python pickle (...)"), else None (an ONNX model, or a file that
    cannot be read: the loader says why)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    other = sniff_format(head) if not head.startswith(b"PK") else None  # a zip may be an .npz: left to the loader
    if other:
        return other
    found = text_start(head)
    return f"a text file (its first line: {found[1]!r})" if found else None


def data_kind(path: str | Path) -> str:
    """Kind of a spec given only a ``path`` (what ``--data PATH`` and a project's ``{"path": ...}`` open
    as): by suffix, or by a folder's content (only images: "images"; else "folder")."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".npz", ".npy"):
        return suffix[1:]
    if suffix == ".py":
        return "python"
    if path.is_dir() and not any(p.suffix.lower() in (".npz", ".npy") for p in path.iterdir()) and list_images(path):
        return "images"
    return "folder" if path.is_dir() else "npz"


def open_data_source(data: Any, model: PreparedModel):
    """A DataSource from a path, a JSON spec dict, or an existing DataSource."""
    if isinstance(data, DataSource):
        return data
    return open_data(data, model)


#: Samples per onnxruntime run when measuring errors (where the model's batch axis is dynamic). 8, not 16:
#: ppocrv4_rec's end-to-end figure over 64 rows peaked 100 MiB higher at 16 (onnxruntime's arenas of both
#: models and the glibc heap grow over the first runs of a larger batch), above its ``quantize``'s peak.
ANALYSIS_BATCH = 8


def sample_batches(model: PreparedModel, data: Any, samples: int | None, batch_size: int = ANALYSIS_BATCH):
    source = open_data_source(data, model)
    n = source.num_samples()
    n = min(n, samples) if (n is not None and samples) else (samples or n)
    yield from source.batches(batch_size, limit=n)


