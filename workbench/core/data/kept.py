"""Another data source's samples, decoded once and kept in memory for the passes that read it again.

The recipe choice reads its calibration rows several times: the held-out rows (every row up to them),
its calibration pass, bias correction's float run, the size probe's first sample. A deflated ``.npz``
is decompressed again on each pass (nudenet_320n's 24 rows, 1.2 MiB each: 67 rows decompressed for
24), an image folder decoded and resized again. :class:`KeptRows` yields the same rows as the
source, in the same order, and keeps them (read-only) up to :data:`MAX_KEPT_BYTES`; past that it drops
them and reads the source on every pass, as the source alone would. A row that is a view of memory the array
does not own (a mapped .npy row or stored .npz member, which ``numpy.save`` / ``numpy.savez`` rewrite in place
when the file is saved again during the job) is kept as a copy, so later passes read the rows the first read.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from workbench.core.data.base import DataSource, WrappedSource

#: Rows are kept while their arrays take at most this many bytes in all (nudenet_320n's 24 calibration rows:
#: 29.5 MiB; ppocrv4_rec's 64: 11.8 MiB); a larger data set is read from its source on every pass.
MAX_KEPT_BYTES = 64 << 20
#: Source kinds that hold exactly ``num_samples`` rows (array files, folders, images, random data): once that many
#: are kept, a pass needs nothing more. Of other kinds (a Python reader, whose count is a hint) the source is read
#: to its end once more.
EXACT_COUNTS = frozenset({"npz", "npy", "folder", "images", "random"})


class KeptRows(WrappedSource):
    """``source``'s samples (same values, same order), each decoded once and kept while the kept rows take at
    most ``max_bytes`` (past that none is kept). Kept arrays are made read-only: a pass that wrote into a feed would change what the
    next pass reads (raises ValueError instead). What describes the data is the source's
    (:class:`~workbench.core.data.base.WrappedSource`), so a shard process reopens the source itself."""

    def __init__(self, source: DataSource, max_bytes: int = MAX_KEPT_BYTES) -> None:
        super().__init__(source)
        self.max_bytes = max_bytes
        self._rows: list[dict[str, np.ndarray]] = []
        self._bytes = 0
        self._full = False  # a row did not fit: nothing more is kept
        self._ended = False  # every row of the source is kept

    @property
    def kept(self) -> int:
        """Rows kept so far."""
        return len(self._rows)

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        yield from (dict(row) for row in self._rows)
        if self._ended or (self.source.kind in EXACT_COUNTS and len(self._rows) == self.source.num_samples()):
            return  # a pass that stopped at the last row (a sample limit) kept them all: nothing left to read
        done = len(self._rows)
        rows = self.source.samples()
        try:
            for i, feed in enumerate(rows):
                if i < done:  # kept already (a pass that stopped early); read again to go on from there
                    continue
                if not self._full:
                    feed = self._keep(feed)
                yield dict(feed)
            self._ended = not self._full
        finally:
            rows.close()

    def _keep(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The row kept for ``feed`` (``feed`` itself when it does not fit). An array that is a view of memory it
        does not own, such as a mapped .npy / .npz row whose file may be saved again in place while kept, is
        copied."""
        size = sum(np.asarray(a).nbytes for a in feed.values())
        if self._bytes + size > self.max_bytes:
            self._full, self._rows, self._bytes = True, [], 0  # later passes read the source alone
            return feed
        row = {k: np.array(a) if isinstance(a, np.ndarray) and not a.flags.owndata else a for k, a in feed.items()}
        for a in row.values():
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
        self._rows.append(row)
        self._bytes += size
        return row
