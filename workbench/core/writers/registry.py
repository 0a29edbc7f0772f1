"""The writers, keyed by plan mode: a new writer is one module plus one line in :data:`WRITERS`.

Every writer takes ``(model, plan, act_qparams)`` and returns a
:class:`~workbench.core.writers.qdq.QdqResult` (new proto, float -> dequantized tensor map, issues).
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.core.formats.qparams import QParams
from workbench.core.planning.plan import QuantPlan
from workbench.core.writers.dynamic import write_dynamic
from workbench.core.writers.qdq import QdqResult, write_qdq
from workbench.core.writers.weight_only import write_weight_only

Writer = Callable[..., QdqResult]

#: plan mode -> writer ``(model, plan, act_qparams) -> QdqResult``
WRITERS: dict[str, Writer] = {
    "static": write_qdq,
    "dynamic": write_dynamic,
    "weight_only": write_weight_only,
}


def write_model(model, plan: QuantPlan, act_qparams: dict[str, QParams] | None = None, *,
                check: bool = True, weights: dict | None = None) -> QdqResult:
    """Write ``plan`` with the writer of its mode (see :data:`WRITERS`).

    ``act_qparams`` is required for static plans only; ``check=False`` skips onnx.checker on the result.
    ``weights``: the static writer's memo of quantized weights, kept between writes of the same unchanged
    ``model.proto`` (:func:`workbench.core.writers.qdq.write_qdq`); the other writers do not read it.

    Raises
    ------
    ExportError
        From the writer (see :func:`workbench.core.writers.qdq.write_qdq`).
    """
    if weights is not None and str(plan.mode) == "static":
        return WRITERS["static"](model, plan, act_qparams or {}, check=check, weights=weights)
    return WRITERS[str(plan.mode)](model, plan, act_qparams or {}, check=check)
