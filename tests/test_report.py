"""The HTML report on digits_cnn: every section, nothing pointing off the page, figures that parse,
and figures that agree with an independent reading of the quantized model and of onnxruntime."""

from __future__ import annotations

import base64
import html
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import Cancelled
from workbench.core.progress import CancelToken
from workbench.core.report.layout import node_positions


class Page(HTMLParser):
    """Section ids and every src / href attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        for key in ("src", "href"):
            if key in a:
                self.refs.append((tag, key, a[key]))


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


@pytest.fixture
def digits(corpus, tmp_path):
    d = corpus / "digits_cnn"
    curve = tmp_path / "curve.json"
    curve.write_text(json.dumps({"metric": "top1", "metric_float": 0.99, "promote_to": "float",
                                 "curve": [{"promoted": 0, "metric": 0.95}, {"promoted": 2, "metric": 0.98}]}))
    out = tmp_path / "report.html"
    rc = main(["report", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--eval", str(d / "eval.npz"),
               "--eval-samples", "40", "--curve-json", str(curve), "-o", str(out), "--no-latency-check"])
    assert rc == 0
    return d, out.read_text(encoding="utf-8")


def test_report_has_every_section_and_no_reference_off_the_page(digits):
    _, text = digits
    page = parse(text)
    assert page.sections == [sid for sid, _ in api.REPORT_SECTIONS]
    assert "http://" not in " ".join(v for _, _, v in page.refs) and "https://" not in " ".join(v for _, _, v in page.refs)
    imgs = [v for tag, key, v in page.refs if tag == "img"]
    # SQNR bars, 4 histograms, the autotune curve, the graph
    assert len(imgs) == 7 and all(v.startswith("data:image/svg+xml;base64,") for v in imgs)
    for uri in imgs:
        svg = ET.fromstring(base64.b64decode(uri.split(",", 1)[1]))  # each figure is well-formed SVG
        hrefs = [v for el in svg.iter() for k, v in el.attrib.items() if k.endswith("href")]
        # only references inside the figure (the colour bar is an embedded PNG)
        assert [h for h in hrefs if not h.startswith(("#", "data:image/png;base64,"))] == []
    assert [v for _, key, v in page.refs if key == "href"] == [f"#{sid}" for sid, _ in api.REPORT_SECTIONS]


def test_report_metric_matches_onnxruntime(digits):
    d, text = digits
    ev = np.load(d / "eval.npz")
    x, y = ev["input"][:40], ev["gt_label"][:40]
    sess = ort.InferenceSession(str(d / "model_opset17.onnx"), providers=["CPUExecutionProvider"])
    top1 = float(np.mean(np.argmax(sess.run(None, {"input": x})[0], axis=-1) == y))
    assert f"<td>top1</td><td class=\"n\">{top1:.4f}</td>" in text
    assert "40 samples of" in text
    assert "autotune --curve-json: all samples of its eval data (not recorded in the file)" in text


def test_histogram_clip_range_is_the_quantizelinear_of_the_written_model(corpus):
    d = corpus / "digits_cnn"
    model = api.open_model(d / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe(), data=str(d / "calib.npz"))
    data = api.collect_report(model, result, str(d / "eval.npz"), eval_samples=16, hist_samples=5)
    assert [h.node for h in data.histograms] == [r.node for r in data.rows[:4]]
    inits = {i.name: numpy_helper.to_array(i) for i in result.proto.graph.initializer}
    for h in data.histograms:
        q = [n for n in result.proto.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == h.tensor]
        if not q:  # the model output stays float: no clip range to draw
            assert h.clip is None and h.tensor == "logits"
        else:
            s, z = float(inits[q[0].input[1]]), int(inits[q[0].input[2]])
            info = np.iinfo(inits[q[0].input[2]].dtype)
            assert h.clip == pytest.approx(((info.min - z) * s, (info.max - z) * s), rel=1e-6)
        # every value of the tensor over the 5 samples is counted once
        probe = onnx.ModelProto()
        probe.CopyFrom(model.proto)
        probe.graph.output.append(onnx.ValueInfoProto(name=h.tensor))
        sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
        x = np.load(d / "eval.npz")["input"][:5]
        n = sum(sess.run([h.tensor], {"input": x[i:i + 1]})[0].size for i in range(5))
        assert int(h.counts.sum()) == h.values == n


def test_histograms_use_no_more_samples_than_eval_samples(corpus):
    d = corpus / "digits_cnn"
    model = api.open_model(d / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe(), data=str(d / "calib.npz"))
    data = api.collect_report(model, result, str(d / "eval.npz"), eval_samples=3, hist_samples=8, worst=1)
    assert [h.samples for h in data.histograms] == [3]
    probe = onnx.ModelProto()
    probe.CopyFrom(model.proto)
    h = data.histograms[0]
    probe.graph.output.append(onnx.ValueInfoProto(name=h.tensor))
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.load(d / "eval.npz")["input"][:3]
    assert h.values == sum(sess.run([h.tensor], {"input": x[i:i + 1]})[0].size for i in range(3))


def test_cancelled_report_writes_nothing(corpus, tmp_path):
    d = corpus / "digits_cnn"
    model = api.open_model(d / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe(), data=str(d / "calib.npz"))
    token = CancelToken()
    token.cancel()
    out = tmp_path / "r.html"
    with pytest.raises(Cancelled):
        api.write_report(out, model, result, str(d / "eval.npz"), eval_samples=4, cancel=token)
    assert list(tmp_path.iterdir()) == []


def test_bad_curve_file_is_one_line_naming_it(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    bad = tmp_path / "curve.json"
    bad.write_text('{"curve": [{"promoted": 1}]}')
    out = tmp_path / "r.html"
    rc = main(["report", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--curve-json", str(bad),
               "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and str(bad) in err[0] and "field curve" in err[0]
    assert not out.exists()


def test_report_of_a_project_replays_its_recipe_and_data(corpus, tmp_path):
    d = corpus / "digits_cnn"
    recipe = tmp_path / "r.json"
    recipe.write_text(api.make_recipe("cpu-u8s8", exclude=["/head/head.2/Gemm"]).to_json())
    proj = tmp_path / "job.wbproj"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--recipe", str(recipe), "--data", str(d / "calib.npz"),
                 "--samples", "20", "-o", str(tmp_path / "q.onnx"), "--save-project", str(proj), "--no-latency-check"]) == 0
    out = tmp_path / "report.html"
    assert main(["report", str(proj), "--eval-samples", "8", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    # the project's recipe (one unit kept in float), its 20 calibration samples, measured on its data
    assert "<td>kept in float</td><td>1</td>" in text and "<td>calibration samples</td><td>20</td>" in text
    assert "/head/head.2/Gemm" in text and "8 samples of" in text and "calib.npz" in text


def test_report_without_data_says_what_to_add(corpus, tmp_path, capsys):
    rc = main(["report", str(corpus / "digits_cnn" / "model_opset17.onnx"), "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == ["error: report: no data given. Add --data CALIB.npz (and --eval EVAL.npz)."]


def test_report_tabulates_a_sweep_of_the_same_recipe(corpus, tmp_path):
    d = corpus / "digits_cnn"
    # --no-latency-check on both: the units the latency placement keeps float are measured, so two loaded runs could
    # quantize different units of digits_cnn (the report then notes them: test_report_sweep_placement)
    common = ["--data", str(d / "calib.npz"), "--eval", str(d / "eval.npz"), "--no-latency-check"]
    sweep = tmp_path / "sweep.json"
    assert main(["sweep", str(d / "model_opset17.onnx"), *common, "--eval-samples", "4", "--executor", "inline",
                 "--json", str(sweep)]) == 0
    out = tmp_path / "report.html"
    assert main(["report", str(d / "model_opset17.onnx"), *common, "--eval-samples", "4", "--sweep-json", str(sweep),
                 "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    doc = json.loads(sweep.read_text())
    best = min(doc["rows"], key=lambda r: (-r["gain_db"], r["node"]))  # the first row of the table
    assert f"({doc['samples']} samples, {doc['tasks']} tasks;" in text
    assert (f"<td>{best['node']}</td><td>{best['op_type']}</td><td class=\"n\">{best['only_quant_db']:.2f}</td>"
            f"<td class=\"n\">{best['only_float_db']:.2f}</td>") in text


def test_dynamic_recipe_report_says_why_there_is_no_per_unit_sqnr(corpus, tmp_path):
    d = corpus / "digits_mlp"
    out = tmp_path / "report.html"
    assert main(["report", str(d / "model_opset17.onnx"), "--preset", "dynamic-u8", "--data", str(d / "calib.npz"),
                 "--eval", str(d / "eval.npz"), "--eval-samples", "8", "-o", str(out), "--no-latency-check"]) == 0
    page = parse(text := out.read_text(encoding="utf-8"))
    assert page.sections == [sid for sid, _ in api.REPORT_SECTIONS]
    assert text.count("No per-unit SQNR: the recipe is dynamic") == 3  # SQNR, histograms, sensitivity
    assert [v for tag, _, v in page.refs if tag == "img"] and "<td>top1</td>" in text  # graph picture, metric


def test_cli_help_does_not_load_matplotlib():
    code = ("import sys\nfrom workbench.cli import main\n"
            "for argv in (['--help'], ['report', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('matplotlib' in sys.modules, 'onnxruntime' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout.strip().splitlines()[-1] == "False False", proc.stderr


def test_graph_positions_without_igraph_keep_every_edge_pointing_forward(corpus, monkeypatch):
    structure = api.graph_structure(api.open_model(corpus / "digits_cnn" / "model_opset17.onnx").proto)
    monkeypatch.setitem(sys.modules, "igraph", None)  # import igraph raises ImportError
    pos = node_positions(structure)
    assert set(pos) == set(structure.names) and len(set(pos.values())) == len(pos)
    names = structure.names
    assert all(pos[names[b]][1] > pos[names[a]][1] for a, b in structure.edges)


def test_report_states_the_recipe_choice_and_the_16_bit_units(corpus, tmp_path, capsys):
    """The recipe section names what the recipe choice did (the line the CLI prints) and which units run
    16-bit activations (here one Conv given uint16 by an override, which the choice keeps as written)."""
    d = corpus / "digits_cnn"
    common = ["--data", str(d / "calib.npz"), "--eval", str(d / "eval.npz"), "--eval-samples", "4"]
    out = tmp_path / "auto.html"
    assert main(["report", str(d / "model_opset17.onnx"), *common, "-o", str(out)]) == 0
    chose = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("recipe choice: "))
    assert f"<td>recipe choice</td><td>{html.escape(chose)}</td>" in out.read_text(encoding="utf-8")
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8",
                                  "overrides": {"/f/f.3/Conv": {"activation": {"dtype": "uint16"}}}}))
    wide = tmp_path / "wide.html"
    assert main(["report", str(d / "model_opset17.onnx"), *common, "--recipe", str(recipe), "-o", str(wide)]) == 0
    text = wide.read_text(encoding="utf-8")
    assert "<td>16-bit activations</td><td>1 unit (/f/f.3/Conv)</td>" in text
    assert "<td>recipe choice</td><td>recipe choice: " in text  # a preset with node overrides only is chosen around


def test_report_says_whether_weights_or_activations_hold_the_noise(digits):
    """The split in the page is the one api.noise_split measures on the same eval samples (the first 16
    of the report's 40: SPLIT_SAMPLES)."""
    d, text = digits
    model = api.open_model(d / "model_opset17.onnx")
    chosen = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), str(d / "calib.npz"))  # as the report does
    result = api.quantize(model, chosen.recipe, data=str(d / "calib.npz"), calibration=chosen.calibration,
                          latency_check=False)  # as the fixture's report (--no-latency-check)
    split = api.noise_split(result.float_model or model, result.proto, str(d / "eval.npz"), samples=40)
    assert split.samples == 16
    assert (f"Weights or activations? Model-output SQNR: {html.escape(split.describe())}. Measured on 16 of the 40 "
            "samples (the split's cap; report --split-samples N measures more)") in text
