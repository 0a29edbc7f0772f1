"""A consecutive range of rows of another data source (a calibration or evaluation shard)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from workbench.core.data.base import DataSource
from workbench.core.errors import DataError


class RowRange(DataSource):
    """Samples ``start`` (inclusive) to ``stop`` (exclusive) of ``source``, in order.

    Raises
    ------
    DataError
        ``start``/``stop`` outside ``0 <= start < stop`` (names the range).
    """

    kind = "rows"

    def __init__(self, source: DataSource, start: int, stop: int) -> None:
        if not (0 <= start < stop):
            raise DataError(f"Row range {start}..{stop} is empty or negative.", hint="Give 0 <= start < stop.")
        super().__init__(source.model)
        self.source, self.start, self.stop = source, int(start), int(stop)
        self.path = getattr(source, "path", None)

    def num_samples(self) -> int | None:
        n = self.source.num_samples()
        return self.stop - self.start if n is None else max(0, min(self.stop, n) - self.start)

    def to_json(self) -> dict:
        return {**self.source.to_json(), "rows": [self.start, self.stop]}

    def labels(self) -> dict[str, np.ndarray]:
        return {k: v[self.start:self.stop] for k, v in self.source.labels().items()}

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        return itertools.islice(self.source.samples(), self.start, self.stop)


def split_rows(n: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` consecutive ``(start, stop)`` ranges covering rows ``0..n`` (sizes differ by <= 1)."""
    shards = max(1, min(int(shards), n))
    bounds = [n * k // shards for k in range(shards + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(shards)]
