"""The :class:`DataSource` protocol shared by every kind of calibration / evaluation data.

A source yields *samples*: dicts ``{input name: array}`` where each array already has the
model's full input shape (batch axis included, e.g. ``(1, 3, 224, 224)``), the model's dtype,
and passed :func:`~workbench.core.data.validate.check_feed`. :meth:`DataSource.batches`
groups consecutive samples along axis 0 when the model's batch axis allows it.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator

import numpy as np

from workbench.core.errors import DataError
from workbench.core.model.load import InputInfo, PreparedModel


def batchable(inputs: list[InputInfo]) -> bool:
    """True when every input has a non-fixed axis 0, so samples can be concatenated along it."""
    return bool(inputs) and all(
        inp.has_shape and len(inp.shape) >= 1 and not (isinstance(inp.shape[0], int) and inp.shape[0] > 0)
        for inp in inputs)


class DataSource:
    """Base class of the data sources returned by :func:`workbench.core.data.loader.open_data`.

    Subclasses implement :meth:`_iter_samples`, :meth:`num_samples` and :meth:`to_json`.

    Attributes
    ----------
    model : PreparedModel
        The model the feeds are validated against.
    notes : list of str
        Non-fatal remarks (dtype casts, ignored arrays, detected layout).
    """

    kind = "base"

    def __init__(self, model: PreparedModel) -> None:
        self.model = model
        self.inputs = model.inputs
        self.notes: list[str] = []

    # -- to implement -------------------------------------------------------------------------
    def num_samples(self) -> int | None:
        """Number of samples, or None when unknown (a Python reader without a count)."""
        raise NotImplementedError

    def to_json(self) -> dict:
        """JSON-safe spec that :func:`workbench.core.data.loader.open_data` turns back into this source."""
        raise NotImplementedError

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    def samples(self, limit: int | None = None) -> Iterator[dict[str, np.ndarray]]:
        """Yield validated single-sample feeds, at most ``limit`` of them (no row past the last is read; a
        ``limit`` past what any source holds, such as 10**30 from a project file, is no limit)."""
        yield from itertools.islice(self._iter_samples(), None if limit is not None and limit > sys.maxsize else limit)

    def numbered_samples(self, limit: int | None = None) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """``(sample index, feed)`` of :meth:`samples`; a view that leaves samples out keeps their indices."""
        yield from enumerate(self.samples(limit))

    def describe(self) -> str:
        """One line for a status bar or log: kind, where, how many samples."""
        n = self.num_samples()
        where = getattr(self, "path", None)
        layout = getattr(self, "layout", None)
        parts = [self.kind] + ([f"{layout} layout"] if isinstance(layout, str) and self.kind in ("npz", "npy") else [])
        return (f"{where}: " if where else "") + ", ".join(parts) + f", {n if n is not None else 'unknown number of'} samples"

    def labels(self) -> dict[str, np.ndarray]:
        """Label arrays stored with the data (``gt_*`` keys of an .npz); empty for other sources."""
        return {}

    @property
    def can_batch(self) -> bool:
        """True when several samples can be concatenated into one feed (dynamic batch axis 0)."""
        return batchable(self.inputs)

    def indexed_batches(self, batch_size: int = 1, limit: int | None = None, *, break_at: int | None = None
                        ) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        """Yield ``(sample indices, feed)``; see :meth:`batches`. With ``break_at``, sample
        ``break_at`` starts a new batch (none holds samples on both sides of it)."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise DataError(f"batch size must be a positive integer, got {batch_size!r}.",
                            hint="Use a batch size of 1 or more.")
        size = batch_size if self.can_batch else 1
        group: list[dict[str, np.ndarray]] = []
        idx: list[int] = []
        for i, feed in self.numbered_samples(limit):
            if group and (len(group) >= size or i == break_at or not _same_tail(group[0], feed)):
                yield idx, _concat(group)
                group, idx = [], []
            group.append(feed)
            idx.append(i)
        if group:
            yield idx, _concat(group)

    def batches(self, batch_size: int = 1, limit: int | None = None) -> Iterator[dict[str, np.ndarray]]:
        """Yield validated feeds of up to ``batch_size`` samples, ready for onnxruntime.

        Samples are concatenated along axis 0 only when every model input has a dynamic axis 0
        (:attr:`can_batch`) and consecutive samples agree on the other axes; otherwise a batch
        holds fewer samples (ragged shapes) or exactly one (fixed batch axis). ``limit`` caps
        the number of samples.

        Raises
        ------
        DataError
            A sample does not match the model (named by file, sample and input).
        """
        for _, feed in self.indexed_batches(batch_size, limit):
            yield feed

class WrappedSource(DataSource):
    """Base of the sources that show another source's samples through a filter or a cache
    (:class:`~workbench.core.data.finite.FiniteRows`, :class:`~workbench.core.data.kept.KeptRows`).

    Its ``model``, ``kind``, ``notes``, ``path`` / ``layout`` (where ``source`` has them), :meth:`num_samples`,
    :meth:`to_json`, :meth:`labels`, :meth:`describe` and :attr:`can_batch` are ``source``'s, so a project or a
    shard process reopens ``source`` itself. Subclasses implement :meth:`_iter_samples` (and may override
    :meth:`numbered_samples`) over ``self.source``.
    """

    def __init__(self, source: DataSource) -> None:
        super().__init__(source.model)
        self.source = source
        self.kind = source.kind
        self.notes = source.notes
        for attr in ("path", "layout"):
            if hasattr(source, attr):
                setattr(self, attr, getattr(source, attr))

    def num_samples(self) -> int | None:
        return self.source.num_samples()

    def to_json(self) -> dict:
        return self.source.to_json()

    def labels(self) -> dict[str, np.ndarray]:
        return self.source.labels()

    def describe(self) -> str:
        return self.source.describe()

    @property
    def can_batch(self) -> bool:
        return self.source.can_batch


def _same_tail(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return all(a[k].shape[1:] == b[k].shape[1:] for k in a)


def _concat(group: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    if len(group) == 1:
        return group[0]
    return {k: np.concatenate([g[k] for g in group], axis=0) for k in group[0]}
