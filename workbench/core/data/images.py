"""A folder of images with a declared preprocessing (Pillow).

Per image, in order: decode, apply the EXIF orientation, convert to RGB (or L when the model has 1 channel), resize to
``size`` = [H, W] (bilinear; ``resize``: ``"stretch"`` (default) ignores the aspect ratio,
``"letterbox"`` scales to fit and pads with ``pad_value`` (default 114, centred, as YOLO
exporters do), ``"center_crop"`` scales the shorter side to fit and crops the centre, as
ImageNet evaluation does), ``x = pixel * scale``, reorder channels (``channel_order``: RGB
or BGR), ``x = (x - mean) / std`` per channel (``mean``/``std`` in the model's channel order),
lay out as ``NCHW`` or ``NHWC`` and add the batch axis when the model input has rank 4. Missing settings come from the model input:
layout from where the channel axis (1 or 3) is, size from fixed H and W.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from workbench.core.data.base import DataSource
from workbench.core.data.validate import check_feed, one_line
from workbench.core.errors import DataError
from workbench.core.model.load import PreparedModel

RESIZE_MODES = ("stretch", "letterbox", "center_crop")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif", ".ppm", ".pgm")


def list_images(folder: Path) -> list[Path]:
    """Image files in ``folder`` and its subfolders, sorted by path."""
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


class ImageFolderSource(DataSource):
    """Samples made from image files; see the module docstring for the preprocessing."""

    kind = "images"

    def __init__(self, model: PreparedModel, path: str | Path, *, size=None, layout=None, channel_order="RGB",
                 mean=None, std=None, scale=1 / 255, input=None, resize="stretch",  # noqa: A002 - spec key
                 pad_value=114) -> None:
        super().__init__(model)
        self.path = Path(path)
        if not self.path.is_dir():
            raise DataError(f"{self.path}: no such image folder.", hint="Check the path.")
        self.files = list_images(self.path)
        if not self.files:
            raise DataError(f"{self.path}: the folder holds no images ({', '.join(IMAGE_SUFFIXES)}).",
                            hint="Point to a folder of image files.")
        self.input = self._pick_input(input)
        rank = len(self.input.shape)
        if rank not in (3, 4):
            raise DataError(f"{self.path}: input '{self.input.name}' has shape {self.input.shape}; images need a "
                            "rank-3 (CHW/HWC) or rank-4 (NCHW/NHWC) input.", hint="Use an .npz source instead.")
        self.layout = (layout or self._guess_layout()).upper()
        if self.layout not in ("NCHW", "NHWC"):
            raise DataError(f"{self.path}: unknown image layout {layout!r}.", hint="Use 'NCHW' or 'NHWC'.")
        self.channel_order = str(channel_order).upper()
        if self.channel_order not in ("RGB", "BGR"):
            raise DataError(f"{self.path}: unknown channel_order {channel_order!r}.", hint="Use 'RGB' or 'BGR'.")
        self.channels = self._dim("C") if isinstance(self._dim("C"), int) else 3
        self.size = self._size(size)
        self.resize = str(resize)
        if self.resize not in RESIZE_MODES:
            raise DataError(f"{self.path}: unknown resize mode {resize!r}.", hint=f"Use one of {', '.join(RESIZE_MODES)}.")
        self.pad_value = int(pad_value)
        self.scale = float(scale)
        self.mean = _per_channel(mean, 0.0, self.channels, "mean", self.path)
        self.std = _per_channel(std, 1.0, self.channels, "std", self.path)
        if np.any(self.std == 0):
            raise DataError(f"{self.path}: std contains 0.", hint="Give a non-zero std per channel.")

    def _pick_input(self, name):
        if name is not None:
            for inp in self.inputs:
                if inp.name == name:
                    return inp
            raise DataError(f"{self.path}: the model has no input '{name}' (inputs: "
                            f"{', '.join(i.name for i in self.inputs)}).", hint="Set 'input' to one of them.")
        if len(self.inputs) != 1:
            raise DataError(f"{self.path}: an image folder feeds one input but the model has {len(self.inputs)} "
                            f"({', '.join(i.name for i in self.inputs)}).",
                            hint="Use an .npz source, or a Python reader for several inputs.")
        return self.inputs[0]

    def _axes(self) -> str:
        axes = self.layout if len(self.input.shape) == 4 else self.layout[1:]
        return axes

    def _dim(self, axis: str):
        return self.input.shape[self._axes().index(axis)]

    def _guess_layout(self) -> str:
        shape = self.input.shape
        c_first = shape[-3] if len(shape) >= 3 else None
        c_last = shape[-1]
        if c_last in (1, 3, 4) and c_first not in (1, 3, 4):
            return "NHWC"
        return "NCHW"

    def _size(self, size) -> tuple[int, int]:
        if size is not None:
            try:
                h, w = (int(v) for v in size)
            except (TypeError, ValueError):
                raise DataError(f"{self.path}: size must be [H, W], got {size!r}.", hint="E.g. \"size\": [224, 224].") from None
            return h, w
        h, w = self._dim("H"), self._dim("W")
        if not (isinstance(h, int) and isinstance(w, int) and h > 0 and w > 0):
            raise DataError(f"{self.path}: input '{self.input.name}' has dynamic height/width {self.input.shape}; "
                            "the image size cannot be taken from the model.", hint="Set \"size\": [H, W].")
        return h, w

    def num_samples(self) -> int:
        return len(self.files)

    def load_image(self, file: Path) -> np.ndarray:
        """One preprocessed image as the input's dtype, shape = the model's feed shape."""
        try:
            from PIL import Image, ImageOps
        except ImportError:  # pragma: no cover - Pillow is a dependency
            raise DataError("Reading images needs Pillow.", hint="pip install 'Pillow>=10'.") from None
        try:
            with Image.open(file) as img:
                img = ImageOps.exif_transpose(img)  # phone photos: apply the EXIF rotation
                img = img.convert("L" if self.channels == 1 else "RGB")
                img = _resize(img, self.size, self.resize, self.pad_value)
                x = np.asarray(img, dtype=np.float32)
        except Exception as exc:  # noqa: BLE001 - decoders raise OSError, SyntaxError, struct.error, zlib.error ...
            raise DataError(f"{file}: cannot read the image ({one_line(exc)}).", hint="Remove or replace the file.") from None
        if x.ndim == 2:
            x = x[:, :, None]
        x = x * self.scale
        if self.channel_order == "BGR":
            x = x[:, :, ::-1]
        x = (x - self.mean) / self.std
        if self.layout == "NCHW":
            x = np.transpose(x, (2, 0, 1))
        if len(self.input.shape) == 4:
            x = x[None]
        return np.ascontiguousarray(x).astype(self.input.dtype)

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        for f in self.files:
            yield check_feed({self.input.name: self.load_image(f)}, [self.input], str(f), self.notes)

    def to_json(self) -> dict:
        return {"kind": "images", "path": str(self.path), "input": self.input.name, "size": list(self.size),
                "layout": self.layout, "channel_order": self.channel_order, "mean": self.mean.tolist(),
                "std": self.std.tolist(), "scale": self.scale, "resize": self.resize, "pad_value": self.pad_value}


def _per_channel(value, default: float, channels: int, what: str, path: Path) -> np.ndarray:
    if value is None:
        return np.full(channels, default, np.float32)
    arr = np.atleast_1d(np.asarray(value, dtype=np.float32))
    if arr.size == 1:
        return np.full(channels, arr[0], np.float32)
    if arr.size != channels:
        raise DataError(f"{path}: {what} has {arr.size} values but the input has {channels} channels.",
                        hint=f"Give one {what} value or one per channel.")
    return arr


def _resize(img, size: tuple[int, int], mode: str, pad_value: int):
    """Resize a PIL image to ``size`` = (H, W) by ``mode`` (see the module docstring)."""
    from PIL import Image

    h, w = size
    if mode == "stretch":
        return img.resize((w, h), Image.Resampling.BILINEAR)
    iw, ih = img.size
    if mode == "letterbox":
        r = min(w / iw, h / ih)
        nw, nh = max(1, round(iw * r)), max(1, round(ih * r))
        canvas = Image.new(img.mode, (w, h), (pad_value,) * len(img.getbands()))
        canvas.paste(img.resize((nw, nh), Image.Resampling.BILINEAR), ((w - nw) // 2, (h - nh) // 2))
        return canvas
    r = max(w / iw, h / ih)
    nw, nh = max(w, round(iw * r)), max(h, round(ih * r))
    big = img.resize((nw, nh), Image.Resampling.BILINEAR)
    left, top = (nw - w) // 2, (nh - h) // 2
    return big.crop((left, top, left + w, top + h))
