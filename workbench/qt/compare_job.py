"""The work of View > Compare Float vs Quantized: the diff of the two models, measured on the calibration data
when it can be read; data that does not fit the model (a wrong .npz, missing inputs) leaves the diff unmeasured,
its quantized pane coloured by the dtype each edge carries, instead of failing the whole comparison.
"""

from __future__ import annotations

from workbench.core import api
from workbench.core.errors import DataError


def compare_or_diff(model, proto, data, *, samples: int | None, progress, cancel):
    """:func:`workbench.core.api.compare_models` of the open float ``model`` and ``proto`` on ``data`` (None: the
    diff alone). When ``data`` cannot be used (:class:`DataError`), the diff without it, its ``no_sqnr`` set to
    the one-line reason (str; "" when measured or no data was given). Other errors (the models do not
    correspond, onnxruntime refuses one, a cancel) are raised as they are."""
    try:
        diff = api.compare_models(model, proto, data, samples=samples, progress=progress, cancel=cancel)
        diff.no_sqnr = ""
        return diff
    except DataError as exc:
        if data is None:
            raise
        reason = exc.message
    diff = api.compare_models(model, proto, None, samples=samples, progress=progress, cancel=cancel)
    diff.no_sqnr = reason
    return diff


def unmeasured_text(reason: str) -> str:
    """The diff tab's and the status bar's words for a diff whose data could not be used (``reason``)."""
    return (f"no SQNR: the calibration data could not be used ({reason.rstrip('.')}); the quantized pane is "
            "coloured by dtype (fix the data in the Calibration panel and compare again)")


__all__ = ["compare_or_diff", "unmeasured_text"]
