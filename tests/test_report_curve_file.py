"""report --curve-json: the curve file is checked field by field on read, as --sweep-json is; a wrong
field is refused in one line naming the file and the field, before the job (it was drawn as nonsense)."""

from __future__ import annotations

import copy
import json
import math

import pytest
from qdq_helpers import tiny_conv_files

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import DataError
from workbench.core.io.jsonsafe import dumps_strict
from workbench.core.tuning.autotune import CurvePoint


def _doc() -> dict:
    """A curve as ``autotune --curve-json`` writes it (one point with an identical output: metric inf)."""
    pts = [CurvePoint(0, 0.5, 1.0, weight_bytes=432, bops=10_000, pareto=True, trial=0),
           CurvePoint(1, math.inf, 0.5, weight_bytes=500, bops=20_000, levels={"conv": "int16"}, trial=1,
                      latency=1.2)]
    return {"metric": "output_sqnr", "metric_float": math.inf, "promote_to": "int16,float", "eval": "e.npz",
            "eval_samples": None, "cost_proxy": "bops", "curve": [p.to_json() for p in pts], "front": [0]}


def _write(tmp_path, doc, name="curve.json"):
    path = tmp_path / name
    path.write_text(dumps_strict(doc, indent=2) if isinstance(doc, dict) else json.dumps(doc))
    return path


def test_written_curve_reads_back(tmp_path):
    doc = _doc()
    got = api.load_curve(_write(tmp_path, doc))
    assert got["curve"][1]["metric"] == math.inf and got["metric_float"] == math.inf
    assert got["curve"][0]["metric"] == 0.5 and got["curve"][1]["levels"] == {"int16": ["conv"]}
    assert got["front"] == [0] and got["promote_to"] == "int16,float"


def _edit(path: str, value):
    def apply(doc):
        keys = path.split(".")
        target = doc
        for k in keys[:-1]:
            target = target[int(k)] if k.isdigit() else target[k]
        last = int(keys[-1]) if keys[-1].isdigit() else keys[-1]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return apply


BAD = [
    ("metric", "x", "field metric holds 'x'"),
    ("metric", 3, "field metric holds 3"),
    ("metric_float", "high", "field metric_float holds 'high'"),
    ("curve.1.levels", 5, "field curve[1].levels holds 5"),
    ("curve.1.levels", {"int16": "conv"}, "field curve[1].levels holds"),
    ("curve.0.metric", "x", "field curve[0].metric holds 'x'"),
    ("curve.0.metric", KeyError, "field curve[0].metric is missing"),
    ("curve.0.promoted", KeyError, "field curve[0].promoted is missing"),
    ("curve.0.promoted", -1, "field curve[0].promoted holds -1"),
    ("curve.0.promoted", True, "field curve[0].promoted holds True"),
    ("curve.0.fraction_int8", 2.0, "field curve[0].fraction_int8 holds 2.0"),
    ("curve.0.weight_bytes", "big", "field curve[0].weight_bytes holds 'big'"),
    ("curve.0.accepted", "yes", "field curve[0].accepted holds 'yes'"),
    ("curve.1.latency", 0, "field curve[1].latency holds 0"),
    ("front", "0", "field front holds '0'"),
    ("eval_samples", 2.5, "field eval_samples holds 2.5"),
    ("curve", [], "field curve holds []"),
    ("curve", KeyError, "field curve is missing"),
    ("curve.0", 7, "field curve[0] holds 7"),
]


@pytest.mark.parametrize("path, value, says", BAD, ids=[f"{p}={v!r}" for p, v, _ in BAD])
def test_nonsense_field_is_named(tmp_path, path, value, says):
    doc = copy.deepcopy(_doc())
    _edit(path, value)(doc)
    f = _write(tmp_path, doc)
    with pytest.raises(DataError) as info:
        api.load_curve(f)
    assert info.value.message.startswith(f"{f}: {says}"), info.value.message


def test_not_an_object(tmp_path):
    f = _write(tmp_path, [1, 2])
    with pytest.raises(DataError, match=r"curve\.json: field \(top level\) holds \[1, 2\]"):
        api.load_curve(f)


def _model(tmp_path):
    return tiny_conv_files(tmp_path)


def test_cli_refuses_before_quantizing(tmp_path, capsys, monkeypatch):
    model, data = _model(tmp_path)
    doc = _doc()
    doc["curve"][1]["levels"] = 5
    curve = _write(tmp_path, doc)
    monkeypatch.setattr(api, "quantize", lambda *a, **k: pytest.fail("quantized before reading the curve"))
    out = tmp_path / "r.html"
    code = main(["report", str(model), "--data", str(data), "--curve-json", str(curve), "-o", str(out)])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"error: {curve}: field curve[1].levels holds 5") and not out.exists()
