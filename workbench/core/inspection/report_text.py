"""The text form of an ``inspect`` report (:func:`workbench.core.inspection.report.inspect_model`'s
dict), with no model library imported: ``workbench-cli inspect`` prints it without loading onnx
or numpy when the quick path (:mod:`workbench.core.inspection.quick`) answers."""

from __future__ import annotations

import math
import re

from workbench.core.wording import count, plural


def format_report(report: dict, params: bool = False) -> str:
    """Plain-text rendering of :func:`inspect_model`'s dict for the terminal.

    ``params`` lists every quantized tensor's scale and zero_point; by default a quantized model's
    parameters are summarized (:func:`param_lines`) and listed one by one only when there are at most
    :data:`LIST_MAX` of them.
    """
    w = report["weights"]
    opsets = ", ".join(f"{d} {v}" for d, v in report["opsets"].items())
    lines = [
        f"file:        {report['file'] or '<in memory>'}",
        f"producer:    {report['producer'] or '-'}  (IR {report['ir_version']}; opsets {opsets}"
        + (f"; upgraded from opset {report['original_opset']}" if _upgraded(report) else "") + ")",
        f"nodes:       {report['nodes']} ({report['nodes_main_graph']} in the main graph, "
        f"{count(len(report['subgraphs']), 'subgraph')})",
        f"weights:     {count(w['count'], 'initializer')}, {w['elements']:,} {plural(w['elements'], 'value')}, {w['bytes'] / 1e6:.2f} MB "
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
        lines.append(f"units:       {count(u['count'], 'quantizable node unit')} with {u['preset']}: "
                     + ", ".join(f"{op} {n}" for op, n in u["by_op"].items())
                     + (f" ({sum(kept.values())} of them kept float by quantize's default guards: "
                        + ", ".join(f"{n} {k}" for k, n in kept.items()) + ")" if kept else ""))
        lines.extend(f"  {name}" for name in u.get("nodes", []))  # the names recipes and overrides use
    q = report["quantized"]
    if q["nodes"]:
        kinds = ", ".join(f"{k} {n}" for k, n in q["kinds"].items())
        ops = ", ".join(f"{k} {n}" for k, n in q["op_types"].items())
        lines.append(f"quantized:   {count(q['nodes'], 'node')} ({kinds}): {ops}")
        if report.get("quantization_summary"):
            lines.append(f"summary:     {report['quantization_summary']}")
    else:
        lines.append("quantized:   no (a float model: no Q/DQ pairs or integer kernels)")
    lines += param_lines(report.get("quantization_parameters", []), report.get("quantization_summary") or "",
                         listed=params, weighted=q.get("constant_weight_ops"))
    for s in report["subgraphs"]:
        lines.append(f"subgraph:    {s['path']} ({count(s['nodes'], 'node')})")
    if report["renames"]:
        lines.append(f"renames:     {len(report['renames'])}")
        lines.extend(f"  {r['kind']} '{r['old']}' -> '{r['new']}'" for r in report["renames"][:20])
        if len(report["renames"]) > 20:
            lines.append(f"  ... {len(report['renames']) - 20} more")
    lines.extend(f"note:        {n}" for n in report["notes"])
    return "\n".join(lines)


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
    output (CLI report, app inspector). A tensor whose scale is not in the file (computed at run time, a
    DynamicQuantizeLinear's) says so in place of the scale and zero_point: ``activation x_quantized: uint8
    per_tensor; scale and zero point computed at run time (DynamicQuantizeLinear)``."""
    where = "" if d["granularity"] == "per_tensor" else (
        f", axis {d['axis']}" + (f", block_size {d['block_size']}" if d["block_size"] else ""))
    text = f"{d['role']} {d['tensor']}: {d['dtype']} {d['granularity']}{where}; "
    if d.get("scale_shape") is None and d["note"]:
        return text + d["note"]
    text += f"scale {_values(d, 'scale')}; zero_point {_values(d, 'zero_point')}"
    return text + (f" ({d['note']})" if d["note"] else "")


# --- the "quantization parameters" section ----------------------------------------------------------

#: a model with at most this many quantized tensors has each listed by default (it fits on a screen)
LIST_MAX = 12
#: entries named per kind of attention line before "... N more"
EXAMPLES = 3
#: the real range a scale covers (scale times the dtype's span) below / above which it is named: a tensor
#: about constant (a LayerNorm epsilon, a dead channel), or one an outlier widened so far that small values
#: all round to zero_point
TINY_RANGE, HUGE_RANGE = 1e-4, 1e4
#: largest finite value of the float element types (ONNX operator spec; OCP MX spec for float4e2m1)
_FLOAT_MAX = {"float8e4m3fn": 448.0, "float8e4m3fnuz": 240.0, "float8e5m2": 57344.0, "float8e5m2fnuz": 57344.0,
              "float4e2m1": 6.0}
_PLURAL = {"activation": "activations", "weight": "weights", "bias": "biases", "input": "inputs", "output": "outputs"}
_ROLE_ORDER = ("activation", "input", "output", "weight", "bias")
#: the quantized compute ops of quant_summary's line ("38 Conv int8/int8") whose weights are usually per-channel
_CHANNEL_OPS = re.compile(r"(\d+) (Conv|ConvTranspose|MatMul|Gemm) (?!float\b)\S+")
_CHANNEL_OP_NAMES = ("Conv", "ConvTranspose", "MatMul", "Gemm")


def param_lines(params: list[dict], summary: str = "", *, listed: bool = False,
                weighted: dict[str, int] | None = None) -> list[str]:
    """The "quantization parameters" section of the text report.

    Parameters
    ----------
    params : list of dict
        :meth:`workbench.core.inspection.quant_reader.QuantTensor.to_json` of each quantized tensor.
    summary : str
        The report's ``quantization_summary`` line (``"QDQ: 38 Conv int8/int8, 13 MatMul int8/int8"``); its
        Conv / MatMul / Gemm counts tell whether per-tensor weights are worth a line.
    listed : bool
        List every tensor (``inspect --params``); otherwise only when there are at most :data:`LIST_MAX`.
    weighted : dict of str to int, optional
        The report's ``quantized.constant_weight_ops``: per float op, its quantized nodes with a constant
        weight (what the per-tensor weights line names); without it, the summary's Conv / MatMul / Gemm rows.

    Returns
    -------
    list of str
        A header, one line per (role, dtype, granularity) group with its count, symmetric / asymmetric
        count and scale range, then "worth a look:" lines (invalid, tiny or huge scales, zero_points at the
        dtype's edge, no per-channel weight in a model of Conv / MatMul), then the list if asked; [] for none.
    """
    if not params:
        return []
    full = listed or len(params) <= LIST_MAX
    lines = [f"quantization parameters: {len(params)} quantized tensors"
             + ("" if full else " (--params lists each)")]
    lines += [f"  {row}" for row in _group_rows(params)]
    notes = _attention(params, summary, weighted)
    if notes:
        lines.append("worth a look:")
        lines += [f"  {n}" if not n.startswith(" ") else n for n in notes]
    if full:
        lines.append("each:" if len(params) > 1 else "the tensor:")
        lines += [f"  {param_line(p)}" for p in params]
    return lines


def param_line(p: dict) -> str:
    """One tensor's line: ``weight w4: int4 per_block ...``, the node named first only when the tensor's
    name does not already hold it (``dq4: weight w4: ...``, but ``activation x_QuantizeLinear_Output: ...``)."""
    text = format_param_json(p)
    return text if not p["node"] or p["node"] in p["tensor"] else f"{p['node']}: {text}"


def _granularity(p: dict) -> str:
    g = p["granularity"].replace("_", "-")
    if g == "per-tensor":
        return g
    return f"{g} axis {p['axis']}" + (f" block_size {p['block_size']}" if p["block_size"] else "")


def _group_rows(params: list[dict]) -> list[str]:
    """One line per (role, dtype, granularity): ``weight      51  int8 per-channel axis 0, symmetric; scale ...``."""
    groups: dict[tuple, list[dict]] = {}
    for p in params:
        groups.setdefault((p["role"], p["dtype"], _granularity(p)), []).append(p)
    order = sorted(groups, key=lambda k: (_ROLE_ORDER.index(k[0]) if k[0] in _ROLE_ORDER else len(_ROLE_ORDER),
                                          -len(groups[k]), k))
    rows = []
    for role, dtype, gran in order:
        ps = groups[role, dtype, gran]
        rows.append(f"{role:<11}{len(ps):>5}  {dtype} {gran}, {_symmetry(ps)}; {_scale_range(ps)}")
    return rows


def _zero_point_range(p: dict) -> tuple[float, float]:
    if p.get("zero_point_shape") is None:  # no zero_point input: 0, a MatMulNBits' 2**(bits-1) (8 for 4 bits)
        limits = _int_limits(p["dtype"]) if p.get("op_type") == "MatMulNBits" else None
        centre = float((limits[1] + 1) // 2) if limits and limits[0] == 0 else 0.0
        return centre, centre
    return p.get("zero_point_min", 0.0), p.get("zero_point_max", 0.0)


def _int_limits(dtype: str) -> tuple[int, int] | None:
    """(qmin, qmax) of an integer element type (``int8`` -> (-128, 127)), None for float types."""
    m = re.fullmatch(r"(u?)int(\d+)", dtype)
    if m is None:
        return None
    bits = int(m.group(2))
    return (0, (1 << bits) - 1) if m.group(1) else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def _symmetric(p: dict) -> bool:
    """Whether every zero_point is the dtype's centre: 0 (signed and float types) or 2**(bits-1) (unsigned)."""
    limits = _int_limits(p["dtype"])
    centre = (limits[1] + 1) // 2 if limits and limits[0] == 0 else 0
    return _zero_point_range(p) == (centre, centre)


def _symmetry(ps: list[dict]) -> str:
    sym = sum(_symmetric(p) for p in ps)
    if sym == len(ps):
        return "symmetric"
    return "asymmetric" if sym == 0 else f"{sym} symmetric, {len(ps) - sym} asymmetric"


def _scale_range(ps: list[dict]) -> str:
    known = [p for p in ps if p.get("scale_shape") is not None and "scale_min" in p]
    if not known:
        return "scale computed at run time"
    lo, hi = min(p["scale_min"] for p in known), max(p["scale_max"] for p in known)
    text = f"scale {lo:.3g}" if lo == hi else f"scale {lo:.3g}..{hi:.3g}"
    return text + (f" ({len(ps) - len(known)} at run time)" if len(known) < len(ps) else "")


def _span(dtype: str) -> float | None:
    """The number of scale steps the dtype covers (255 for int8), None for an unknown dtype."""
    limits = _int_limits(dtype)
    if limits is not None:
        return float(limits[1] - limits[0])
    return 2 * _FLOAT_MAX[dtype] if dtype in _FLOAT_MAX else None


def _name(p: dict) -> str:
    return p["tensor"] if not p["node"] or p["node"] in p["tensor"] else f"{p['tensor']} ({p['node']})"


def _examples(ps: list[dict], what) -> list[str]:
    """The first :data:`EXAMPLES` of ``ps``, a line each (``  weight w: scale 1e-09``), and "... N more"."""
    lines = [f"    {p['role']} {_name(p)}: {what(p)}" for p in ps[:EXAMPLES]]
    return lines + ([f"    ... {len(ps) - EXAMPLES} more"] if len(ps) > EXAMPLES else [])


def _counts(ps: list[dict]) -> str:
    by_role: dict[str, int] = {}
    for p in ps:
        by_role[p["role"]] = by_role.get(p["role"], 0) + 1
    return ", ".join(f"{n} {_PLURAL.get(r, r) if n > 1 else r}" for r, n in by_role.items())


def _magnitudes(p: dict) -> tuple[float, float]:
    """Smallest and largest |scale|: a negative scale dequantizes as well as a positive one (onnxruntime's
    symmetric MatMulNBits stores the signed largest weight of a block over -8); without the JSON's
    magnitudes, the signed range (a negative minimum then reads as not positive)."""
    return p.get("scale_abs_min", p["scale_min"]), p.get("scale_abs_max", p["scale_max"])


def _scale_text(p: dict) -> str:
    lo, hi = p["scale_min"], p["scale_max"]
    return f"scale {lo:.3g}" if lo == hi else f"scale {lo:.3g}..{hi:.3g}"


def _attention(params: list[dict], summary: str, weighted: dict[str, int] | None = None) -> list[str]:
    """The few lines worth a look; see :func:`param_lines`."""
    scaled = [p for p in params if p.get("scale_shape") is not None and "scale_min" in p]
    bad = [p for p in scaled if not all(math.isfinite(v) and v > 0 for v in _magnitudes(p))]
    ranged = [(p, _span(p["dtype"])) for p in scaled if p not in bad and p["role"] != "bias"]
    tiny = [p for p, span in ranged if span and _magnitudes(p)[0] * span < TINY_RANGE]
    huge = [p for p, span in ranged if span and _magnitudes(p)[1] * span > HUGE_RANGE]
    notes = []
    if bad:
        notes.append(f"scale zero or not finite ({_counts(bad)}): the tensor dequantizes to nan, inf or 0:")
        notes += _examples(bad, _scale_text)
    if tiny:
        notes.append(f"tiny scale ({_counts(tiny)}): the values span under {TINY_RANGE:g} (an epsilon, a zero bias, "
                     "a dead channel):")
        notes += _examples(sorted(tiny, key=lambda p: _magnitudes(p)[0]), _scale_text)
    if huge:
        notes.append(f"huge scale ({_counts(huge)}): the values span over {HUGE_RANGE:g}, so small values round to "
                     "zero_point (an outlier or a -inf mask widened the range):")
        notes += _examples(sorted(huge, key=lambda p: -_magnitudes(p)[1]), _scale_text)
    edge = [p for p in params if p["role"] in ("activation", "input", "output") and _at_edge(p)]
    if edge:
        notes.append(f"zero_point at the dtype's edge ({_counts(edge)}): one-sided ranges, so values of the other sign "
                     "clip to 0 (usual after a Relu; --params lists them)")
    notes += _per_tensor_weights(params, summary, weighted)
    return notes


def _at_edge(p: dict) -> bool:
    limits = _int_limits(p["dtype"])
    if limits is None or p.get("scale_shape") is None or p.get("zero_point_shape") is None and limits[0] < 0:
        return False  # float types; computed at run time (dynamic); a signed type without zero_point has 0
    lo, hi = _zero_point_range(p)
    return lo == limits[0] or hi == limits[1]


def _per_tensor_weights(params: list[dict], summary: str, weighted: dict[str, int] | None = None) -> list[str]:
    """A line when no weight is per-channel or per-block in a model whose Conv / MatMul / Gemm run quantized
    (``weighted``: those with a constant weight, per op; else the summary's rows of them, one per op)."""
    weights = [p for p in params if p["role"] == "weight"]
    if weighted is not None:
        ops = [(n, op) for op, n in weighted.items() if op in _CHANNEL_OP_NAMES and n]
    else:
        rows: dict[str, int] = {}
        for n, op in _CHANNEL_OPS.findall(summary):
            rows[op] = rows.get(op, 0) + int(n)
        ops = [(n, op) for op, n in rows.items()]
    if not weights or not ops or any(p["granularity"] != "per_tensor" for p in weights):
        return []
    names = " and ".join(f"{n} {op}" for n, op in ops)
    take = plural(sum(n for n, _ in ops), "takes", "take")  # "1 Conv usually takes", "2 Conv usually take"
    return [f"every weight is per-tensor ({_counts(weights)}), though the model's {names} usually {take} per-channel "
            "weights:", "    a scale per output channel keeps small channels' precision; quantize the float model with "
            "per_channel weights (Workbench's presets do)"]
