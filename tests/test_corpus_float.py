"""The corpus task metrics reproduce the float numbers stated in each model's meta.json."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import corpus_metrics as cm

ROOT = Path(__file__).resolve().parent.parent

FAST = ["digits_cnn/model_opset17.onnx", "digits_cnn/model_opset13.onnx", "digits_mlp/model_opset17.onnx",
        "digits_mlp/model_opset13.onnx", "digits_transformer/model_opset17.onnx",
        "digits_transformer/model_opset14.onnx", "ppocr_mobile_v2_cls", "minilm_l6_v2",
        "silero_vad/silero_vad.onnx", "nudenet_320n"]

# The numbers the corpus README states, so a changed meta.json cannot silently move the target.
# (metric, value, half a unit of the last stated digit)
STATED = {"digits_cnn": ("accuracy", 0.9956, 5e-5), "digits_mlp": ("accuracy", 0.9756, 5e-5),
          "digits_transformer": ("accuracy", 0.9689, 5e-5), "ppocr_mobile_v2_cls": ("accuracy", 1.0, 0),
          "minilm_l6_v2": ("top1", 1.0, 0), "silero_vad": ("chunk_accuracy", 0.846, 5e-4),
          "nudenet_320n": ("detections", 6, 0)}


@pytest.mark.slow
@pytest.mark.parametrize("name", FAST)
def test_float_metric_matches_meta(corpus, name):
    model = {m.name: m for m in cm.corpus_models(corpus)}[name]
    got = model.task(cm.session_runner(model.path(corpus)), corpus / model.folder)
    assert model.expected, f"no float metric found in {model.folder}/meta.json"
    for key, want in model.expected.items():
        assert got[key] == pytest.approx(want, abs=1e-6), key
    key, stated, tol = STATED[model.folder]
    assert got[key] == pytest.approx(stated, abs=tol)
    if model.folder == "silero_vad":
        assert got["roc_auc"] == pytest.approx(0.950, abs=5e-4)


@pytest.mark.slow
def test_nudenet_detections_as_listed(corpus):
    """Per-class max scores >= 0.25 per eval image equal meta.json's list (scores to 3 decimals)."""
    folder = corpus / "nudenet_320n"
    scores = cm.nudenet_class_scores(cm.session_runner(folder / "model.onnx"), folder)

    found = cm.nudenet_detections(scores, np.load(folder / "eval.npz")["gt_image_name"])
    assert found["astronaut"] == pytest.approx({"FACE_FEMALE": 0.84, "FEMALE_BREAST_COVERED": 0.377}, abs=5e-4)
    assert found["camera"] == pytest.approx({"FACE_MALE": 0.399, "FACE_FEMALE": 0.323}, abs=5e-4)
    assert found["coffee"] == {} and len(found) == 8
