"""The report verb: measure, render and write the HTML file atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.core.analysis.noise_split import SPLIT_SAMPLES
from workbench.core.io.atomic import atomic_write_bytes, check_not_input
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.report.collect import collect_report
from workbench.core.report.html import render_html


def write_report(path: str | Path, model, result: QuantizeResult, eval_data: Any, *,
                 eval_samples: int | None = 32, metric: Any = None, curve: dict | None = None, sweep=None, worst: int = 4,
                 hist_samples: int = 8, progress: ProgressFn | None = None,
                 cancel: CancelToken | None = None, choice: str = "",
                 split_samples: int | None = SPLIT_SAMPLES) -> Path:
    """Write the HTML report of ``result`` to ``path`` (temp file + rename; nothing is left on failure).

    Measures as :func:`workbench.core.report.collect.collect_report` (one analysis pass over
    ``eval_samples`` samples, the histograms of the ``worst`` units over ``hist_samples``, one
    evaluation of both models, the graph layout), then renders :func:`workbench.core.report.html.render_html`.
    ``choice``: the recipe choice's summary line, shown with the recipe; ``split_samples``: at most this
    many of those samples measure the weights vs activations split (None: all, 0: no split).

    Raises
    ------
    ExportError
        ``path`` is an input of the job, or its folder is missing or not writable.
    DataError, ModelError
        From the measurement.
    Cancelled
        ``cancel`` was set (nothing written).
    """
    path = Path(path)
    check_not_input(path)
    progress = progress or no_progress
    data = collect_report(model, result, eval_data, eval_samples=eval_samples, metric=metric, curve=curve,
                          sweep=sweep, worst=worst, hist_samples=hist_samples, progress=progress, cancel=cancel,
                          choice=choice, split_samples=split_samples)
    progress(0, 0, "Drawing the report")
    page = render_html(data)
    if cancel is not None:
        cancel.check()
    atomic_write_bytes(path, page.encode("utf-8"))
    return path
