"""Lay a :class:`ReportData` out as one self-contained HTML page.

The page has no script and no external reference: CSS is inline and every figure is an SVG
``data:`` URI, so it renders the same offline, attached to a review or a bug report. Text from the
model or the user (node names, messages, the recipe) goes through :func:`html.escape`.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from workbench.core.analysis.evaluate import fmt_metric
from workbench.core.issues import IssueCode
from workbench.core.report.collect import ReportData
from workbench.core.report.figures import RANKING, autotune_curve, data_uri, histogram, sqnr_bars, svg_bytes
from workbench.core.report.graph_figure import graph_picture
from workbench.core.report.sqnr_bands import stop_labels
from workbench.core.report.sweep_match import sweep_placement_note
from workbench.core.wording import count

#: Section ids, in page order, with their headings.
REPORT_SECTIONS: tuple[tuple[str, str], ...] = (
    ("recipe", "Recipe"), ("issues", "Plan issues"), ("sqnr", "Per-unit SQNR"),
    ("histograms", "Worst units: histograms"), ("sensitivity", "Sensitivity"),
    ("autotune", "Autotune curve"), ("metrics", "Task metric, float vs quantized"),
    ("graph", "Graph coloured by SQNR"),
)
#: Units drawn in the SQNR bar chart and listed in the sensitivity table.
TOP_BARS = 40
TOP_TABLE = 25

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#212121;background:#fafafa}
header{background:#263238;color:#eceff1;padding:14px 24px}header h1{margin:0 0 4px;font-size:20px}
header p{margin:2px 0;font-size:13px}nav{padding:6px 24px;background:#eceff1;font-size:13px}
nav a{margin-right:14px;color:#1565c0;text-decoration:none}main{padding:0 24px 24px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;margin:16px 0;padding:8px 16px}
h2{font-size:16px;margin:8px 0}table{border-collapse:collapse;font-size:12px;margin:6px 0}
td,th{border:1px solid #e0e0e0;padding:3px 8px;text-align:left}th{background:#f5f5f5}
td.n{text-align:right;font-variant-numeric:tabular-nums}pre{background:#f5f5f5;padding:8px;font-size:11px;
overflow:auto;max-height:320px}img{max-width:100%;height:auto}.note{color:#616161;font-size:12px}
.hists{display:flex;flex-wrap:wrap;gap:8px}.hists img{max-width:560px}.warning{color:#b71c1c}
"""


def _db(v: float) -> str:
    return "inf" if v == math.inf else ("nan" if not math.isfinite(v) else f"{v:.2f}")


def _img(fig, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="{data_uri(svg_bytes(fig))}">'


def _table(head: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _calibrated(d: ReportData, units: list) -> str:
    """The recipe table's "calibration samples": the rows calibrated, or why none were: every unit kept float
    (the latency check on a quiet Intel Xeon kept digits_cnn's 5: the report read "none (no calibration)" beside
    the --data it was given and the recipe choice that calibrated on it), or no calibration (a dynamic recipe)."""
    if d.calib_samples is not None:
        return str(d.calib_samples)
    if d.result.plan.units and not units:
        return "none: no unit is quantized, so the model written needs no range"
    return "none (no calibration)"


def _recipe(d: ReportData) -> str:
    r = d.result.recipe
    counted = d.result.plan.counted_units()  # a Relu carried by its input's units is not counted
    units = [u for u in counted.values() if not u.excluded]
    facts = [["preset", escape(r.preset)], ["mode", escape(str(d.result.plan.mode))],
             ["quantized node units", str(len(units))],
             ["kept in float", str(len(counted) - len(units))],
             ["calibration samples", _calibrated(d, units)]]
    wide = _wide_units(d)
    if wide:
        span = wide[0] if len(wide) == 1 else f"{wide[0]} .. {wide[-1]}"
        facts.append(["16-bit activations", escape(f"{count(len(wide), 'unit')} ({span})")])
    if d.choice:
        facts.append(["recipe choice", escape(d.choice)])
    return _table(["field", "value"], facts) + f"<pre>{escape(r.to_json())}</pre>"


def _wide_units(d: ReportData) -> list[str]:
    """Quantized units with a 16-bit integer activation among their outputs, in plan order."""
    acts = d.result.plan.activations
    return [u.node for u in d.result.plan.units.values() if not u.excluded
            and any(t in acts and acts[t].qtype.bits == 16 and not acts[t].qtype.is_float for t in u.outputs)]


def _issues(d: ReportData) -> str:
    issues = d.result.issues
    calibration = d.result.calibration.warnings if d.result.calibration is not None else []
    if not issues and not calibration:
        return '<p class="note">The plan raised no issue.</p>'
    rows = [[escape(str(getattr(i, "severity", ""))), escape(str(getattr(getattr(i, "code", ""), "value", ""))),
             escape(getattr(i, "node", "") or ""), escape(getattr(i, "message", str(i)))] for i in issues]
    rows += [["warning", "calibration", "", escape(w)] for w in calibration]  # NaN / Inf or empty tensors in the data
    return f"<p>{count(len(rows), 'issue')}.</p>" + _table(["severity", "code", "node", "message"], rows)


def _analysis_note(d: ReportData) -> str:
    return f"{d.analysis_samples} samples of {d.eval_source}; {d.analysis_runtime}."


#: what the bars rank by and what their colours mean (the app's SQNR bands)
RANKING_NOTE = (f"The bars rank units by {RANKING} (worst first): each unit's output in the quantized model against "
                "the float model, everything upstream quantized too, so every unit behind a bad one is low as well. "
                "The noise a unit adds itself (local SQNR) ranks the table under Sensitivity. Colours: the app's SQNR "
                "colours, " + ", ".join(label for label, _c in stop_labels())
                + " (red to green, linear between), grey not measured.")


def _sqnr(d: ReportData) -> str:
    if not d.rows:
        return f'<p class="note">{escape(_why_no_rows(d))}</p>'
    worst = d.rows[0]
    branch = [u.node for u in d.result.plan.units.values() if u.graph and not u.excluded]
    unmeasured = (f" {count(len(branch), 'unit')} inside If/Loop bodies ({', '.join(branch[:4])}"
                  f"{' ...' if len(branch) > 4 else ''}) are not measured per unit; the end-to-end figures "
                  "include them." if branch else "")
    return (_split(d) + f"<p>Worst unit: <b>{escape(worst.node)}</b> ({escape(worst.op_type)}) at {_db(worst.sqnr_db)} dB; "
            f"{sum(1 for r in d.rows if r.sqnr_db < 20)} of {count(len(d.rows), 'measured unit')} below 20 dB."
            f"{escape(unmeasured)}</p>"
            f"<p class=\"note\">{escape(RANKING_NOTE)}</p>"
            + _img(sqnr_bars(d.rows, top=TOP_BARS, note=_analysis_note(d)), f"per-unit SQNR bars; {_analysis_note(d)}"))


def _split(d: ReportData) -> str:
    """Weights vs activations: the model output's SQNR with only one of them quantized."""
    sp = d.split
    if sp is None:
        return ""
    if not sp.samples:  # nothing to measure (integer outputs only): its describe() says why
        return f"<p>Weights or activations? {escape(sp.describe())}.</p>"
    on = (f"{sp.samples} of the {d.analysis_samples} samples (the split's cap; report --split-samples N measures more)"
          if 0 < sp.samples < d.analysis_samples else f"{sp.samples} samples")
    rule = ("noise powers of independent sources add" if sp.additive else
            "noise powers of independent sources add, and these two do not, so the shares are rough")
    return (f"<p>Weights or activations? Model-output SQNR: {escape(sp.describe())}. Measured on {on} "
            f"of {escape(d.eval_source)}, float and quantized models ORT_DISABLE_ALL; {rule}.</p>")


def _why_no_rows(d: ReportData) -> str:
    """Why the analysis measured no unit: a recipe without activation Q/DQ pairs, or units only in subgraphs."""
    mode = str(getattr(d.result.plan.mode, "value", d.result.plan.mode))
    if mode != "static":
        return (f"No per-unit SQNR: the recipe is {mode}, so unit outputs have no fixed-scale "
                "QuantizeLinear / DequantizeLinear pair to compare at; the task metric below compares the whole model.")
    main_units = [u for u in d.result.plan.units.values() if not u.graph]
    if main_units and all(u.excluded for u in main_units):
        if any(i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node for i in d.result.issues):
            return ("No unit was measured: the latency check kept every unit float (slower quantized), as "
                    "`quantize` writes the model; `--no-latency-check` measures them.")
        return "No unit was measured: every unit is float (the recipe, its exclusions or a guard keep them so)."
    return ("No unit of the main graph was measured (units inside If/Loop bodies are not; "
            "`workbench-cli inspect` shows where they are).")


def _histograms(d: ReportData) -> str:
    if not d.histograms:
        return f'<p class="note">Nothing to draw. {escape(_why_no_rows(d))}</p>'
    note = f"{d.eval_source}; float model on onnxruntime {d.ort_version}, CPUExecutionProvider, ORT_ENABLE_ALL."
    imgs = "".join(_img(histogram(h, note=note), f"histogram of {h.tensor}; {h.samples} samples of {note}") for h in d.histograms)
    return ('<p class="note">Float values of each unit\'s output with the clip range of its quantizer (red) and '
            f'the quantization grid (q - zero_point) * scale (grey).</p><div class="hists">{imgs}</div>')


def _sensitivity(d: ReportData) -> str:
    if not d.sensitivity:
        return _sweep(d) + f'<p class="note">{escape(_why_no_rows(d))}</p>'
    rows = [[escape(s.node), escape(s.op_type), _db(s.local_sqnr_db), _db(s.output_sqnr_db)]
            for s in d.sensitivity[:TOP_TABLE]]
    return _sweep(d) + ("<p>Units ranked by the noise they add themselves (lowest local SQNR first): the unit's "
            "quantized nodes (input and output rounding, weights) run alone on the float model's values of its "
            "inputs, against float (inf only when that is exact); where they cannot run alone, "
            "1/SQNR<sub>local</sub> = 1/SQNR<sub>out</sub> &minus; 1/SQNR<sub>in</sub> (linear ratios; additive "
            "uncorrelated quantization noise, Widrow &amp; Koll&aacute;r 2008). "
            f"From the same analysis pass: {escape(_analysis_note(d))}</p>"
            + _table(["node", "op", "local SQNR dB", "output SQNR dB"], rows, {2, 3}))


def sweep_nothing_quantized(samples: int) -> str:
    """The report's words for a sweep of a model that quantizes no node unit: no dB figure, which would be only the
    float rounding between the float model run optimised and the written one run as written (digits_cnn with every
    unit excluded: 137.74 dB)."""
    return (f"End to end, from a sensitivity sweep ({count(samples, 'sample')}): nothing was quantized. Every node "
            "unit stayed float (the recipe, its exclusions, a guard or the latency check kept them so), so the model "
            "computes in float like the float model: no quantization noise, no SQNR figure and no unit to sweep.")


def _sweep(d: ReportData) -> str:
    sw = d.sweep
    if sw is None:
        return ('<p class="note">No end-to-end sweep in this report (<code>workbench-cli sweep ... --json sweep.json'
                '</code>, then <code>--sweep-json sweep.json</code>); the local table below needs none.</p>')
    rows = [[escape(r.node), escape(r.op_type), _db(r.only_quant_db), _db(r.only_float_db), _db(r.local_db),
             _db(r.gain_db)] for r in sorted(sw.rows, key=lambda r: (-r.gain_db, r.node))[:TOP_TABLE]]
    placement = sweep_placement_note(sw, d.result.recipe)  # the sweep's timed decisions, when they differ
    note = f'<p class="note">{escape(placement[0].upper() + placement[1:])}.</p>' if placement else ""
    if not sw.rows and not d.result.plan.quantizes_any():
        return note + f'<p class="note">{escape(sweep_nothing_quantized(sw.samples))}</p>'
    return note + (f"<p>End to end, from a sensitivity sweep ({sw.samples} samples, {sw.tasks} tasks; onnxruntime, "
            "CPUExecutionProvider, suffix models ORT_DISABLE_ALL): model-output SQNR with only the unit quantized, "
            f"with only it kept float, and what keeping it float gains over all quantized ({_db(sw.all_quant_db)} dB)."
            "</p>" + _table(["node", "op", "only quantized dB", "only float dB", "own output dB", "gain if float dB"], rows,
                            {2, 3, 4, 5}))


def _autotune(d: ReportData) -> str:
    if not d.curve:
        return ('<p class="note">No autotune curve in this report: in the app, run Run &gt; Autotune before '
                'exporting the report; on the command line, run <code>workbench-cli autotune ... --curve-json '
                'curve.json</code> and pass <code>--curve-json curve.json</code> to report.</p>')
    n, data = d.curve.get("eval_samples"), d.curve.get("eval")
    used = f"{n} samples" if n else "all samples"
    note = (f"autotune --curve-json: {used} of {data or 'its eval data (not recorded in the file)'}; "
            f"{d.eval_runtime}")
    if d.curve.get("cancelled"):
        note = f"cancelled after {len(d.curve['curve'])} recipes: a partial curve; {note}"
        return (f'<p class="note">Autotune was cancelled after {len(d.curve["curve"])} recipes: the curve below '
                "is partial (no recipe chosen).</p>" + _img(autotune_curve(d.curve, note=note),
                                                            f"autotune curve; {note}"))
    return _img(autotune_curve(d.curve, note=note), f"autotune curve; {note}")


def _metrics(d: ReportData) -> str:
    e = d.evaluation
    if e is None:
        return '<p class="note">Not evaluated.</p>'
    head = f'<p>{e.samples} samples of {escape(d.eval_source)}; {escape(d.eval_runtime)}.</p>' \
        + "".join(f'<p class="note">{escape(n)}</p>' for n in e.notes)
    table = ""
    if e.metric is not None:
        drop = e.float_metric - e.quant_metric
        table = _table(["metric", "float", "quantized", "float - quantized"],
                       [[escape(str(e.metric)), fmt_metric(e.float_metric), fmt_metric(e.quant_metric),
                         fmt_metric(drop)]], {1, 2, 3})
    outs = _table(["output", "SQNR dB", "cosine", "max abs error", "MSE"],
                  [[escape(o.name), _db(o.sqnr_db), f"{o.cosine:.5f}", f"{o.max_abs_error:.4g}", f"{o.mse:.3g}"]
                   for o in e.outputs], {1, 2, 3, 4})
    return head + table + "<p>Per model output:</p>" + outs


def _graph(d: ReportData) -> str:
    sqnr = {r.node: r.sqnr_db for r in d.rows}
    fig = graph_picture(d.structure, d.positions, sqnr, note=_analysis_note(d))
    return _img(fig, f"graph coloured by SQNR; {_analysis_note(d)}")


_BODIES = {"recipe": _recipe, "issues": _issues, "sqnr": _sqnr, "histograms": _histograms,
           "sensitivity": _sensitivity, "autotune": _autotune, "metrics": _metrics, "graph": _graph}


def render_html(d: ReportData, *, title: str | None = None) -> str:
    """The report page (UTF-8 text); section ids are those of :data:`REPORT_SECTIONS`."""
    name = title or ("/".join(Path(d.model_path).parts[-2:]) if d.model_path else "model")
    nav = "".join(f'<a href="#{sid}">{escape(h)}</a>' for sid, h in REPORT_SECTIONS)
    body = "".join(f'<section id="{sid}"><h2>{escape(h)}</h2>{_BODIES[sid](d)}</section>' for sid, h in REPORT_SECTIONS)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\">"
            f"<title>Quantization report: {escape(name)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>Quantization report: {escape(name)}</h1>"
            f"<p>{escape(d.model_path)} &middot; preset {escape(d.result.recipe.preset)} &middot; "
            f"Workbench {escape(d.version)} &middot; onnxruntime {escape(d.ort_version)} &middot; {escape(d.created)}</p>"
            f"</header><nav>{nav}</nav><main>{body}</main></body></html>\n")
