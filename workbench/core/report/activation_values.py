"""The float values of chosen tensors of a float model over the first rows of a data source: the values both
histogram views draw (:mod:`workbench.core.report.histograms`, :mod:`workbench.core.report.unit_histograms`).

One onnxruntime run of the model per data row with the tensors added as outputs together; a graph input is
read from the row itself and costs no run.
"""

from __future__ import annotations

import numpy as np

from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.runtime.session import add_outputs, make_session


def activation_values(model, tensors: list[str], source, *, samples: int, label: str, threads: int = 0,
                      progress: ProgressFn | None = None,
                      cancel: CancelToken | None = None) -> tuple[dict[str, np.ndarray], int, bool]:
    """Finite values (float64, 1-D, row after row) of each of ``tensors`` (distinct names of the main graph)
    over the first ``samples`` rows of ``source`` (an opened data source), with ``progress(rows, samples, label)``
    after each row and ``threads`` for onnxruntime (0: its default).

    Returns ``(values by tensor, rows run, whether the source holds more rows than samples)``.

    Raises
    ------
    DataError
        The data does not fit the model.
    Cancelled
        ``cancel`` was set.
    """
    progress = progress or no_progress
    inputs = {i.name for i in model.proto.graph.input}
    run = [t for t in tensors if t not in inputs]
    sess = make_session(add_outputs(model.proto, run), threads=threads) if run else None
    chunks: dict[str, list[np.ndarray]] = {t: [] for t in tensors}
    rows, more = 0, False
    for feed in source.batches(1, limit=samples + 1):
        if rows == samples:
            more = True
            break
        if cancel is not None:
            cancel.check()
        outs = dict(zip(run, sess.run(run, feed), strict=True)) if sess is not None else {}
        for t in tensors:
            a = np.asarray(feed[t] if t in inputs else outs[t], dtype=np.float64).ravel()
            chunks[t].append(a[np.isfinite(a)])
        rows += 1
        progress(rows, samples, label)
    return {t: np.concatenate(c) if c else np.zeros(0) for t, c in chunks.items()}, rows, more
