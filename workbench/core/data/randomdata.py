"""Random feeds from the model's input shapes, for smoke runs (never for real calibration).

Symbolic or unknown dims become 1 unless ``dims`` maps their name to a size. Values: float
inputs ~ N(0, 1); integer inputs uniform in [0, ``int_high``) (small non-negative ints are
valid token ids, masks and indices); bool inputs uniform. The same ``seed`` gives the same
samples on every pass.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from workbench.core.data.base import DataSource
from workbench.core.data.validate import dtype_kind
from workbench.core.errors import DataError
from workbench.core.model.load import InputInfo, PreparedModel


class RandomSource(DataSource):
    """``count`` random samples shaped like the model's inputs."""

    kind = "random"

    def __init__(self, model: PreparedModel, count: int = 8, seed: int = 0, dims: dict | None = None,
                 int_high: int = 2) -> None:
        super().__init__(model)
        if not isinstance(count, int) or count < 1:
            raise DataError(f"random data: count must be a positive integer, got {count!r}.",
                            hint="E.g. {\"kind\": \"random\", \"count\": 8}.")
        self.count, self.seed, self.dims, self.int_high = count, int(seed), dict(dims or {}), int(int_high)
        for inp in self.inputs:
            if dtype_kind(inp.dtype) not in ("float", "int", "bool"):
                raise DataError(f"random data: input '{inp.name}' has dtype {inp.dtype}; random values are only "
                                "made for float, int and bool inputs.", hint="Use an .npz or Python reader.")

    def feed_shape(self, inp: InputInfo) -> tuple[int, ...]:
        """Shape of one random feed for ``inp`` (symbolic dims from ``dims`` or 1)."""
        out = []
        for d in inp.shape:
            if isinstance(d, int) and d > 0:
                out.append(d)
            elif isinstance(d, str) and d in self.dims:
                out.append(int(self.dims[d]))
            else:
                out.append(1)
        return tuple(out)

    def num_samples(self) -> int:
        return self.count

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        rng = np.random.default_rng(self.seed)
        for _ in range(self.count):
            feed = {}
            for inp in self.inputs:
                shape = self.feed_shape(inp)
                kind = dtype_kind(inp.dtype)
                if kind == "float":
                    feed[inp.name] = rng.standard_normal(shape, dtype=np.float32).astype(inp.dtype)
                elif kind == "int":
                    feed[inp.name] = rng.integers(0, self.int_high, size=shape).astype(inp.dtype)
                else:
                    feed[inp.name] = rng.integers(0, 2, size=shape).astype(bool)
            yield feed

    def to_json(self) -> dict:
        spec = {"kind": "random", "count": self.count, "seed": self.seed}
        if self.dims:
            spec["dims"] = dict(self.dims)
        if self.int_high != 2:
            spec["int_high"] = self.int_high
        return spec
