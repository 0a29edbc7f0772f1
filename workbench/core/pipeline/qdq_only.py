"""Which recipe fields give a plan dtypes a QDQ file cannot hold (QONNX-only activations, bipolar weights).

:func:`workbench.core.pipeline.export.refuse_qdq_only` refuses such a plan naming its node units;
:func:`qdq_only_fields` says where the recipe sets those dtypes, so the CLI and the app can tell the
user which field to change (``rules[0].activation.dtype``, ``overrides["conv1"].weight.dtype``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from workbench.core.planning.plan import QuantPlan
from workbench.core.recipe.recipe import Recipe


@dataclass
class QdqOnlyField:
    """One recipe field setting a QONNX-only dtype: ``field`` (``rules[0].activation.dtype``), that
    ``dtype`` (``uint3``, ``bipolar``) and the ``nodes`` (node units, plan order) it gives it to."""

    field: str
    dtype: str
    nodes: list[str] = field(default_factory=list)


def _qdq_only(role: str, spec) -> bool:
    return spec is not None and (spec.dtype == "bipolar" or (role == "activation" and spec.qtype.qonnx_only))


def qdq_only_fields(recipe: Recipe, plan: QuantPlan) -> list[QdqOnlyField]:
    """The fields of ``recipe`` that give a quantized unit of ``plan`` (planned from ``recipe``) a dtype a
    QDQ file cannot hold: a QONNX-only activation dtype, or bipolar weights. Every rule matching the unit
    and its override count when they set that dtype for that role. In the order the plan's units first meet
    them; empty when the dtypes come from elsewhere (a preset) or none is QONNX-only. Cheap (no data)."""
    found: dict[str, QdqOnlyField] = {}
    for unit in plan.units.values():
        if unit.excluded:
            continue
        for role in ("activation", "weight"):
            spec = getattr(unit.config, role)
            if not _qdq_only(role, spec):
                continue
            setters = [(f"rules[{i}]", r) for i, r in enumerate(recipe.rules) if r.matches(unit.node, unit.op_type)]
            if unit.node in recipe.overrides:
                setters.append((f"overrides[{json.dumps(unit.node)}]", recipe.overrides[unit.node]))
            for where, settings in setters:
                part = getattr(settings, role)
                if part is None or part.dtype != spec.dtype:
                    continue
                entry = found.setdefault(f"{where}.{role}.dtype", QdqOnlyField(f"{where}.{role}.dtype", spec.dtype))
                if unit.node not in entry.nodes:
                    entry.nodes.append(unit.node)
    return list(found.values())


def qdq_only_fields_text(fields: list[QdqOnlyField], *, prefix: str = "", limit: int = 4) -> str:
    """``fields`` as one phrase for a message: the first ``limit`` field names (each after ``prefix``, e.g.
    "recipe." for a project's recipe), comma-separated, " ..." when there are more."""
    shown = ", ".join(prefix + f.field for f in fields[:limit])
    return shown + (" ..." if len(fields) > limit else "")
