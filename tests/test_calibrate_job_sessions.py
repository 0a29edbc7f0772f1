"""The onnxruntime sessions the app's calibrate job builds after its latency passes, counted by phase (each
costs 0.1-0.4 s of CPU on ppocrv4_rec): the placement guard's scores build the float model once (3, was 4:
it built it for each score); the per-unit analysis three (the float model, the quantized one, the units alone on
float inputs for their own noise), the output error two, the weights vs activations
split five (the float model, the model as written, its two variants, the weights dequantized to match their
float sources) and the weight errors' dequantization one. The latency placement's and the latency check's sessions are left out: a loaded machine measures again
what an idle one read from its cache."""

from __future__ import annotations

import collections

import onnxruntime as ort
import pytest

from workbench.core import api
from workbench.core.jobs import job_calibrate
from workbench.core.pipeline import latency_placement
from workbench.core.progress import CancelToken


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


@pytest.fixture
def sessions(monkeypatch):
    """Every InferenceSession built, as the step (progress message) running when it was built."""
    built: list[str] = []
    step = ["(start)"]
    real = ort.InferenceSession.__init__

    def init(self, *a, **k):
        built.append(step[0])
        real(self, *a, **k)

    monkeypatch.setattr(ort.InferenceSession, "__init__", init)
    return built, step


def test_sessions_built_per_step(corpus, sessions, monkeypatch):
    probed: list[str] = []
    monkeypatch.setattr(latency_placement, "_probe",  # the first probed unit measured slower: the guard runs
                        lambda job, name, *_a: probed.append(name) or (latency_placement._Slow("slower (test)", 2.0, 1e-4)
                                                                     if len(probed) == 1 else None))
    built, step = sessions
    model_dir = corpus / "digits_transformer"
    payload = {"model_path": str(model_dir / "model_opset17.onnx"), "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": {"kind": "npz", "path": str(model_dir / "calib.npz")}, "samples": 8, "calibration": None,
               "reuse": False, "analysis_samples": 8}

    def progress(done, total, message):
        step[0] = message.split(": ")[0] if not message.startswith("Placement guard: output SQNR") else message

    job_calibrate(payload, progress, CancelToken())
    counts = collections.Counter(built)
    assert counts["Placement guard: output SQNR with and without the placement"] == 3  # float once, 2 quantized
    # analysis: float and quantized with taps, the units' fragments (then the output error's two, built before its
    # first report);
    # the split: float, as written, weights-only, the weights dequantized to find their float sources, activations-only;
    # then the weight errors' dequantization
    assert (counts["Analysing"], counts["Output error"], counts["Weights vs activations"]) == (5, 0, 6)
