"""Autotune with end-to-end ranking (rank="e2e"): candidates re-ranked by the task metric measured with
each one promoted alone; checked on case 13 (../shared/cases) and on the ordering helper."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.tuning.autotune import _one_by_one, _rank_end_to_end, autotune

CASE13 = "13_detector_concat_box_score"


def test_rank_end_to_end_orders_candidates_by_metric_and_keeps_the_tail():
    scores = {"a": 0.5, "b": 0.9, "c": 0.5, "d": 0.7}
    seen = []

    def alone(n):
        seen.append(n)
        return scores[n]

    assert _rank_end_to_end(["a", "b", "c", "d", "e"], 4, _one_by_one(alone), lambda *a: None, None) == ["b", "d", "a", "c", "e"]
    assert seen == ["a", "b", "c", "d"]  # the tail beyond the candidates is never measured


def test_case13_autotune_e2e_meets_target(cases, tmp_path):
    model = api.open_model(cases / f"{CASE13}.onnx")
    data = str(cases / f"{CASE13}.npz")
    metric = tmp_path / "neg_score_err.py"
    metric.write_text("import numpy as np\n"
                      "def metric(outputs, batch):\n"
                      "    q = outputs['Y'][..., 4:]; r = batch['ref:Y'][..., 4:]\n"
                      "    return -float(np.max(np.abs(q - r)))\n")
    with pytest.raises(RecipeError, match="ranking"):
        autotune(model, api.make_recipe("cpu-u8s8"), data=data, eval_data=data, metric=str(metric),
                 allow_code=True, min_score=-0.02, rank="sqnr")
    tuned = autotune(model, api.make_recipe("cpu-u8s8"), data=data, eval_data=data, metric=str(metric),
                     allow_code=True, min_score=-0.01, rank="e2e", e2e_candidates=4)
    # the default already scores -0.0148 (the score MatMul writes float); -0.01 needs a promotion
    assert tuned.met and tuned.metric_before < -0.01 <= tuned.metric_after
    assert 1 <= len(tuned.promoted) <= 2, tuned.promoted
    with np.load(data) as z:
        keys = [k for k in z.files if not k.startswith("gt_")]
        feeds = [{k: z[k][i] for k in keys} for i in range(len(z[keys[0]]))]
    runs = [ort.InferenceSession(p.SerializeToString(), providers=["CPUExecutionProvider"])
            for p in (model.proto, tuned.result.proto)]
    err = max(float(np.max(np.abs(runs[0].run(None, f)[0][..., 4:] - runs[1].run(None, f)[0][..., 4:])))
              for f in feeds)
    assert err < 0.01
