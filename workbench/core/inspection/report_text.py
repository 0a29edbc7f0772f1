"""The text form of an ``inspect`` report (:func:`workbench.core.inspection.report.inspect_model`'s
dict), with no model library imported: ``workbench-cli inspect`` prints it without loading onnx
or numpy when the quick path (:mod:`workbench.core.inspection.quick`) answers."""

from __future__ import annotations

import math


def format_report(report: dict) -> str:
    """Plain-text rendering of :func:`inspect_model`'s dict for the terminal."""
    w = report["weights"]
    opsets = ", ".join(f"{d} {v}" for d, v in report["opsets"].items())
    lines = [
        f"file:        {report['file'] or '<in memory>'}",
        f"producer:    {report['producer'] or '-'}  (IR {report['ir_version']}; opsets {opsets}"
        + (f"; upgraded from opset {report['original_opset']}" if _upgraded(report) else "") + ")",
        f"nodes:       {report['nodes']} ({report['nodes_main_graph']} in the main graph, "
        f"{len(report['subgraphs'])} subgraphs)",
        f"weights:     {w['count']} initializers, {w['elements']:,} values, {w['bytes'] / 1e6:.2f} MB "
        f"in {w['location']}" + (f" ({', '.join(w['external_data_files'])})" if w["external_data_files"] else "")
        + (f" (after lifting {w['lifted_from_constant_nodes']} Constant nodes)" if w["lifted_from_constant_nodes"] else ""),
        "inputs:",
        *[f"  {i['name']}: {i['dtype']} {_shape(i['shape'])}" for i in report["inputs"]],
        "outputs:",
        *[f"  {o['name']}: {o['dtype']} {_shape(o['shape'])}" for o in report["outputs"]],
        "ops:         " + ", ".join(f"{op} {n}" for op, n in report["op_histogram"].items()),
    ]
    u = report.get("units")
    if u:
        kept = u.get("kept_float") or {}
        lines.append(f"units:       {u['count']} quantizable node units with {u['preset']}: "
                     + ", ".join(f"{op} {n}" for op, n in u["by_op"].items())
                     + (f" ({sum(kept.values())} of them kept float by quantize's default guards: "
                        + ", ".join(f"{n} {k}" for k, n in kept.items()) + ")" if kept else ""))
        lines.extend(f"  {name}" for name in u.get("nodes", []))  # the names recipes and overrides use
    q = report["quantized"]
    if q["nodes"]:
        kinds = ", ".join(f"{k} {n}" for k, n in q["kinds"].items())
        ops = ", ".join(f"{k} {n}" for k, n in q["op_types"].items())
        lines.append(f"quantized:   {q['nodes']} nodes ({kinds}): {ops}")
        if report.get("quantization_summary"):
            lines.append(f"summary:     {report['quantization_summary']}")
    else:
        lines.append("quantized:   no (a float model: no Q/DQ pairs or integer kernels)")
    lines += _quant_param_lines(report.get("quantization_parameters", []))
    for s in report["subgraphs"]:
        lines.append(f"subgraph:    {s['path']} ({s['nodes']} nodes)")
    if report["renames"]:
        lines.append(f"renames:     {len(report['renames'])}")
        lines.extend(f"  {r['kind']} '{r['old']}' -> '{r['new']}'" for r in report["renames"][:20])
        if len(report["renames"]) > 20:
            lines.append(f"  ... {len(report['renames']) - 20} more")
    lines.extend(f"note:        {n}" for n in report["notes"])
    return "\n".join(lines)


def _quant_param_lines(params: list[dict], limit: int = 200) -> list[str]:
    """The "quantization parameters" section: one line per quantized tensor (see quant_reader)."""
    if not params:
        return []
    lines = [f"quantization parameters: {len(params)} quantized tensors"]
    lines += [f"  {p['node']}: {format_param_json(p)}" for p in params[:limit]]
    if len(params) > limit:
        lines.append(f"  ... {len(params) - limit} more (use --json)")
    return lines


#: Symbolic dims longer than this are expressions shape inference computed (nudenet_320n's output0:
#: about 400 characters of floor(...)); they print as "?" like an unknown dim.
MAX_DIM_TEXT = 24


def _dim(d) -> str:
    if d is None or (isinstance(d, int) and d < 0) or (isinstance(d, str) and len(d) > MAX_DIM_TEXT):
        return "?"  # unknown: None, a negative dim_value (some exporters write -1) or a long expression
    return str(d)


def _shape(shape) -> str:
    return "[" + ", ".join(_dim(d) for d in shape) + "]"


def _upgraded(report: dict) -> bool:
    return report["original_opset"] not in (0, report["opsets"].get("ai.onnx", 0))


def _flat(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _flat(v)
    else:
        yield values


def _values(d: dict, key: str, n: int = 4) -> str:
    vals, shape = d.get(key), d.get(f"{key}_shape")
    if shape is None:
        return "-"
    size = math.prod(shape) if shape else 1
    if vals is not None and size == 1:
        return f"{float(next(_flat(vals))):.6g}"
    if vals is None:  # values left out of the JSON (too many): the shape and range say enough
        listed = "[...]"
    else:
        flat = list(_flat(vals))
        if any(isinstance(v, float) for v in flat):  # one dtype, as numpy would make of the list
            flat = [float(v) for v in flat]
        head = ", ".join(f"{v:.6g}" for v in flat[:n])
        listed = f"[{head}{', ...' if size > n else ''}]"
    return (f"{listed} (shape {list(shape)}, "
            f"{d.get(f'{key}_min', 0):.4g}..{d.get(f'{key}_max', 0):.4g})")


def format_param_json(d: dict) -> str:
    """One line of text for :meth:`workbench.core.inspection.quant_reader.QuantTensor.to_json`
    output (CLI report, app inspector)."""
    where = "" if d["granularity"] == "per_tensor" else (
        f", axis {d['axis']}" + (f", block_size {d['block_size']}" if d["block_size"] else ""))
    text = (f"{d['role']} {d['tensor']}: {d['dtype']} {d['granularity']}{where}; scale {_values(d, 'scale')}; "
            f"zero_point {_values(d, 'zero_point')}")
    return text + (f" ({d['note']})" if d["note"] else "")
