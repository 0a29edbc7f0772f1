"""autotune refuses a --min-score above the float model's score on metrics the float model tops."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.tuning.autotune import autotune, check_target

MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))


def test_cli_refuses_cosine_target_above_float(tmp_path, capsys):
    out = tmp_path / "q.onnx"
    code = main(["autotune", MODEL, "--data", CALIB, "--samples", "16", "--eval", EVAL, "--eval-samples", "8",
                 "--metric", "cosine", "--min-score", "1.5", "-o", str(out)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1, err
    assert "--min-score 1.5" in err[0] and "cosine (1.0000)" in err[0]  # float vs itself: cosine 1
    assert not out.exists()


def test_ceiling_metrics_refuse_and_allow_targets_at_or_below_float():
    with pytest.raises(RecipeError, match=r"--min-score 31 .*output_sqnr \(30\.0000\)"):
        check_target("output_sqnr", 31.0, 30.0)
    assert check_target("cosine", 1.0, 1.0) == [] and check_target("sqnr", 200.0, float("inf")) == []
    assert check_target("top1", 0.5, float("nan")) == []


def test_top1_target_above_float_only_warns():
    z = np.load(EVAL)
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    pred = np.concatenate([sess.run(None, {"input": z["input"][i:i + 1]})[0].argmax(1) for i in range(8)])
    float_top1 = float(np.mean(pred == z["gt_label"][:8]))
    model = api.open_model(MODEL)
    res = autotune(model, api.make_recipe("cpu-u8s8"), data=CALIB, eval_data=EVAL, metric="top1",
                   min_score=float_top1 + 0.01, samples=16, eval_samples=8, promote_to="float", max_trials=2)
    assert res.metric_float == float_top1
    assert res.notes[0] == (f"warning: --min-score {float_top1 + 0.01:g} is above the float model's top1 "
                            f"({float_top1:.4f}); the target is likely out of reach")


def test_a_negative_drop_or_two_targets_are_usage_errors(tmp_path, capsys):
    """--max-drop -0.5 became --min-score float + 0.5 and ran trials; with both options --max-drop was
    dropped without a word. Both are refused before anything runs (exit 2), and so is analyze --top -3
    (it printed '(-3 of 5 units shown')."""
    base = ["autotune", MODEL, "--data", CALIB, "--eval", EVAL, "-o", str(tmp_path / "q.onnx")]
    for argv, said in (([*base, "--max-drop", "-0.5"], "argument --max-drop: -0.5: give 0 or more"),
                       ([*base, "--max-drop", "0.1", "--min-score", "3"],
                        "argument --min-score: not allowed with argument --max-drop"),
                       (["analyze", MODEL, "--data", CALIB, "--top", "-3"], "argument --top: -3: give 0 or more")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2 and said in capsys.readouterr().err
    assert not (tmp_path / "q.onnx").exists()
    model = api.open_model(MODEL)
    with pytest.raises(RecipeError, match="max_drop -0.5: a drop from the float model's metric is 0 or more"):
        autotune(model, api.make_recipe("cpu-u8s8"), data=CALIB, eval_data=EVAL, max_drop=-0.5)
