"""Metric resolution and noise for autotune's target (workbench.core.tuning.resolution)."""

from __future__ import annotations

import numpy as np
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core import api
from workbench.core.tuning.autotune import autotune, load_score
from workbench.core.tuning.resolution import measure_resolution

MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))


def _logits(rows: int, flips: int) -> tuple[dict, dict]:
    """Float and 'quantized' logits of ``rows`` rows whose argmax differs on ``flips`` rows."""
    rng = np.random.default_rng(1)
    f = rng.normal(size=(rows, 10)).astype(np.float32)
    q = f.copy()
    for i in range(flips):
        top = int(np.argmax(f[i]))
        q[i, top] = f[i].min() - 1.0
    return {"y": q}, {"y": f}


def test_top1_moves_in_steps_of_one_row():
    q, f = _logits(96, 3)
    labels = {"gt_label": np.argmax(f["y"], axis=1)}  # float right on every row
    res = measure_resolution(load_score("top1"), q, f, labels, 96)
    assert res.step == 1 / 96
    # 3 of 96 rows lost: the drop is -3/96 = -0.031; its bootstrap interval contains it, never above 0
    assert res.drop_low < -3 / 96 < res.drop_high <= 0  # (93/96)^96 = 5 %: some resamples lose no row
    assert "steps of 1/96" in res.describe()


def test_continuous_metric_has_no_step():
    q, f = _logits(32, 0)
    q = {"y": q["y"] + np.float32(0.01)}
    res = measure_resolution(load_score("cosine"), q, f, {}, 32)
    assert res.step is None and res.drop_low <= res.drop_high <= 0


def _rows_exact(q: dict, f: dict, labels: dict) -> float:
    """Fraction of rows whose output equals float's to 1e-7: a fraction-of-rows metric that 8-bit
    rounding always loses."""
    name = next(iter(f))
    diff = np.abs(q[name] - f[name]).reshape(len(f[name]), -1).max(axis=1)
    return float(np.mean(diff < 1e-7))


def test_max_drop_below_one_row_is_reported_not_chased():
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    # 16 eval rows: the metric moves in steps of 1/16; a max drop of 0.01 allows no lost row
    res = autotune(model, recipe, data=CALIB, eval_data=EVAL, metric=_rows_exact, max_drop=0.01, samples=8,
                   eval_samples=16)
    assert res.metric_float == 1.0 and res.metric_before < 0.99 and res.resolution.step == 1 / 16
    assert not res.met and res.promoted == [] and res.recipe == recipe and len(res.curve) == 1
    assert "below the metric's step on 16 eval rows (1/16 = 0.0625)" in res.notes[0]


def test_cli_prints_the_resolution(tmp_path, capsys):
    assert main(["autotune", MODEL, "--data", CALIB, "--samples", "8", "--eval", EVAL, "--eval-samples", "16",
                 "--metric", "top1", "--max-drop", "0.5", "-o", str(tmp_path / "q.onnx")]) == 0
    assert "metric top1 on 16 eval rows (it moves in steps of 1/16 = 0.0625):" in capsys.readouterr().out


def test_each_interval_belongs_to_the_model_it_follows(tmp_path, capsys, fake_latency):
    """The interval printed after "after autotune" is the tuned model's (it was the all-quantized
    model's: minilm_l6_v2 printed "after autotune 0.9901" then [-0.2595, -0.2429], the interval of 0.7494)."""
    fake_latency.quantized_at(0.5)  # the tuned model measured faster: no "NOT faster than float" on a loaded machine
    model = api.open_model(MODEL)
    kw = {"data": CALIB, "eval_data": EVAL, "metric": "cosine", "max_drop": 0.000005, "samples": 8,
          "eval_samples": 16, "promote_to": "float"}
    res = autotune(model, api.make_recipe("cpu-u8s8"), **kw)
    assert res.met and len(res.levels) == 3 and res.metric_after > res.metric_before
    from workbench.core.tuning.autotune import make_eval_set, run_outputs

    ev = make_eval_set(model, EVAL, 16)
    score = load_score("cosine")
    want = measure_resolution(score, run_outputs(res.result.proto, ev.feeds), ev.float_outputs, {}, 16)
    assert res.resolution_after == want and want.drop_low <= res.metric_after - res.metric_float <= want.drop_high
    assert res.resolution.drop_high < res.resolution_after.drop_low  # two different models, two intervals
    assert res.resolution.step is None and res.resolution_after.step is None  # cosine is no fraction of rows
    assert main(["autotune", MODEL, "--data", CALIB, "--samples", "8", "--eval", EVAL, "--eval-samples", "16",
                 "--metric", "cosine", "--max-drop", "0.000005", "--promote-to", "float",
                 "-o", str(tmp_path / "q.onnx")]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("metric cosine"))
    r0, r1 = res.resolution, res.resolution_after
    assert lines[at] == "metric cosine on 16 eval rows:"
    assert lines[at + 2] == (f"  all quantized {res.metric_before:.4f}; 95% bootstrap interval of all quantized - "
                             f"float [{r0.drop_low:+.4f}, {r0.drop_high:+.4f}]")
    assert lines[at + 4].startswith(f"  after autotune {res.metric_after:.4f} (3 units promoted: 3 to float; target met)")
    assert lines[at + 4].endswith(f"; 95% bootstrap interval of after autotune - float [{r1.drop_low:+.4f}, "
                                  f"{r1.drop_high:+.4f}]")
