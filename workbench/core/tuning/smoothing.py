"""SmoothQuant for autotune's trials: the per-channel activation ranges measured once, the rewrite redone per trial.

SmoothQuant (Xiao et al. 2023, eq. 4) gives each smoothed layer its own factors
``s_j = max|X_j| ** alpha / max|W_j| ** (1 - alpha)``; ``max|X_j|`` comes from a float run, so a unit's
factors do not depend on which other units are quantized. Each trial therefore reuses the ranges of
one float pass (:func:`workbench.core.transforms.smoothquant.activation_absmax`) and rewrites the model
again: the units that stay quantized (8 or 16 bits) are smoothed exactly as the recipe's own
``smoothquant`` step would smooth them, and a unit promoted to float is left unsmoothed (its
``Mul(X, 1/s)`` would only cost time). The tuned recipe records those units in ``smoothquant.exclude``,
so replaying it gives the same model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.core.data.loader import sample_batches
from workbench.core.model.load import PreparedModel, prepare_proto
from workbench.core.progress import CancelToken
from workbench.core.recipe.presets import get_preset
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import PlanMode
from workbench.core.transforms import smoothquant as sq


def without_smoothing(recipe: Recipe, floats: list[str]) -> Recipe:
    """``recipe`` with ``floats`` added to its ``smoothquant.exclude`` (unchanged without SmoothQuant)."""
    spec = recipe.smoothquant
    if spec is None or not floats:
        return recipe
    exclude = tuple(dict.fromkeys([*spec.exclude, *floats]))
    return recipe.model_copy(update={"smoothquant": spec.model_copy(update={"exclude": exclude})})


class SmoothedTrials:
    """Models and recipes for trials of one recipe whose SmoothQuant ranges are measured once.

    Without a ``smoothquant`` step (or for a non-static preset) :meth:`trial` returns the model and
    recipe as they are.
    """

    def __init__(self, model: PreparedModel, recipe: Recipe, data: Any, samples: int | None,
                 cancel: CancelToken | None = None):
        self.model = model
        spec = recipe.smoothquant
        self.alpha = spec.alpha if spec is not None else 0.5
        self.absmax: dict[str, np.ndarray] | None = None
        if spec is not None and get_preset(recipe.preset).mode == PlanMode.STATIC and data is not None:
            nodes = sq.smoothable(model.proto, spec.op_types, spec.exclude)
            self.absmax = (sq.activation_absmax(model.proto, nodes, sample_batches(model, data, samples),
                                                cancel=cancel) if nodes else {})

    def trial(self, recipe: Recipe, floats: list[str]) -> tuple[PreparedModel, Recipe]:
        """The (already smoothed) model and the recipe to quantize it with, ``floats`` kept float.

        The recipe drops its ``smoothquant`` step (done here) and excludes the inserted ``*.smooth``
        Mul nodes, as the pipeline's own SmoothQuant pass does.
        """
        if self.absmax is None:
            return self.model, recipe
        skip = set(floats)
        keep = {n: a for n, a in self.absmax.items() if n not in skip}
        model = self.model
        if keep:
            model = prepare_proto(sq.smooth_proto(self.model.proto, keep, self.alpha), path=self.model.path,
                                  sha256=self.model.sha256)
        return model, recipe.model_copy(update={"smoothquant": None,
                                                "exclude": [*recipe.exclude, "*" + sq.SUFFIX]})
