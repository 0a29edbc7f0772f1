"""The rows of a data source whose float inputs are all finite: what an evaluation can measure.

A sample holding NaN or +-Inf in a float input gives the float model outputs that are NaN, +-Inf or,
after a Relu or a Max, finite but unrelated to the quantized model's (which saturates the value to
its grid): on case 05's sample 4, one +Inf pixel took the output SQNR from about 40 dB to 19 dB on
the elements both models kept finite. Every figure that compares the two models (evaluate, analyze,
the sensitivity sweep, autotune, compare, the report) therefore leaves such samples out, names them
in a note and counts the others. Calibration keeps its own handling (NaN-aware ranges, a warning per
sample) and does not use this view; the recipe choice reads its data through :class:`WithoutRows`, as a
file without those rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from workbench.core.data.base import DataSource, WrappedSource
from workbench.core.errors import DataError
from workbench.core.wording import count


def nonfinite_input(feed: dict[str, np.ndarray]) -> str | None:
    """The first input of ``feed`` with a NaN or +-Inf value (float dtypes only), else None."""
    for name, v in feed.items():
        a = np.asarray(v)
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            return name
    return None


class FiniteRows(WrappedSource):
    """``source`` without the samples whose float inputs hold NaN / Inf (in the same order; indices
    and labels stay those of ``source``). ``left_out`` lists ``(sample index, input name)`` of the
    samples the last pass left out; :meth:`note` says so in one line.

    Raises
    ------
    DataError
        From iteration, when every sample read holds NaN / Inf (nothing left to measure).
    """

    def __init__(self, source: DataSource) -> None:
        super().__init__(source)
        self.left_out: list[tuple[int, str]] = []

    def numbered_samples(self, limit: int | None = None) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        self.left_out = []
        kept = 0
        for i, feed in self.source.numbered_samples(limit):
            bad = nonfinite_input(feed)
            if bad is not None:
                self.left_out.append((i, bad))
                continue
            kept += 1
            yield i, feed
        if not kept and self.left_out:
            where = getattr(self, "path", None) or "the data"
            raise DataError(f"{where}: every sample read holds NaN/Inf in a float input (first: sample "
                            f"{self.left_out[0][0]}, input {self.left_out[0][1]!r}), so no figure can compare "
                            "the two models.", hint="Give samples with finite inputs (a float mask of -inf: "
                                                    "use numpy.finfo(numpy.float32).min instead).")

    def samples(self, limit: int | None = None) -> Iterator[dict[str, np.ndarray]]:
        """The finite samples among the first ``limit`` of ``source``."""
        for _, feed in self.numbered_samples(limit):
            yield feed

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        return self.samples()

    def note(self) -> str | None:
        """One line naming the samples left out by the last pass, or None."""
        if not self.left_out:
            return None
        shown = ", ".join(str(i) for i, _ in self.left_out[:8]) + (" ..." if len(self.left_out) > 8 else "")
        where = getattr(self, "path", None) or "the data"
        return (f"{where}: {count(len(self.left_out), 'sample')} left out of the figures ({shown}): NaN/Inf in "
                f"input {self.left_out[0][1]!r}: the two models' outputs there cannot be compared")


def finite_rows(source: DataSource) -> FiniteRows:
    """``source`` seen through :class:`FiniteRows` (itself when it already is one)."""
    return source if isinstance(source, FiniteRows) else FiniteRows(source)


class WithoutRows(WrappedSource):
    """``source`` without the samples at ``rows`` (indices of ``source``), the others numbered from 0 as in a
    file that never held them: the recipe choice reads its data so, leaving out the rows whose float inputs
    hold NaN / Inf before it picks the rows it holds out. :meth:`original` gives a sample's index in
    ``source``. Labels stay ``source``'s (the choice reads none)."""

    def __init__(self, source: DataSource, rows) -> None:
        super().__init__(source)
        self.rows = sorted(set(rows))

    def num_samples(self) -> int | None:
        n = self.source.num_samples()
        return None if n is None else n - sum(1 for i in self.rows if i < n)

    def _iter_samples(self) -> Iterator[dict[str, np.ndarray]]:
        left_out = set(self.rows)
        for i, feed in enumerate(self.source.samples()):
            if i not in left_out:
                yield feed

    def original(self, index: int) -> int:
        """The index in ``source`` of this view's sample ``index``."""
        for r in self.rows:
            if r <= index:
                index += 1
        return index
