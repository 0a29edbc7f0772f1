"""Plan rules for MX block formats: MX activations stay float, non-32 block sizes are flagged."""

from __future__ import annotations

from workbench.core.formats.mx import is_mx
from workbench.core.formats.mx_formats import BLOCK_SIZE
from workbench.core.issues import IssueCode, PlanIssue


def plan_issues(units) -> list:
    """Plan issues for MX specs (``units``: the plan's NodeUnits): non-32 block sizes and activations.

    MX activations would need their shared exponent computed at run time, which a static QDQ graph
    cannot express, so the plan leaves them float (the per_block activation rule) and says why here.
    """


    out = []
    for u in units.values():
        if u.excluded:
            continue
        act = u.config.activation
        if act is not None and is_mx(act.dtype):
            out.append(PlanIssue(u.node, "info", f"activation dtype {act.dtype}: MX activations need a shared "
                                 "exponent computed at run time, which static QDQ cannot express; left in float.", code=IssueCode.MX_ACTIVATION_FLOAT))
        for q in u.quant_inputs:
            if q.role == "weight" and is_mx(q.spec.dtype) and q.spec.block_size != BLOCK_SIZE:
                out.append(PlanIssue(u.node, "warning", f"{q.spec.dtype} with block_size {q.spec.block_size}: "
                                     f"valid ONNX, but OCP MX v1.0 blocks have {BLOCK_SIZE} elements.", code=IssueCode.MX_BLOCK_SIZE))
    return out


