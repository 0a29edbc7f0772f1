"""compare_models reports each of its phases (matching the models, loading the two sessions, comparing the
samples), each starting at done = 0, so a front end shows one bar across them (it reported only the samples,
after several seconds of matching and loading unseen)."""

from __future__ import annotations

import onnx
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.progress import COMPARE_PHASES


def test_compare_reports_its_phases_in_order_each_from_zero(tmp_path):
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    data = str(EXAMPLE / "digits_cnn_calib.npz")
    out = tmp_path / "q.onnx"
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, samples=8), out)
    events: list[tuple[int, int, str]] = []
    diff = api.compare_models(model, onnx.load(out), data, samples=12,
                              progress=lambda d, t, m: events.append((d, t, m)))
    assert diff.samples == 12
    names = [n for n, _share in COMPARE_PHASES]
    phase = [next(n for n in names if m.startswith(n)) for _d, _t, m in events]
    assert list(dict.fromkeys(phase)) == names
    firsts = [events[phase.index(n)] for n in names]
    assert [(d, t) for d, t, _m in firsts] == [(0, 1), (0, 2), (0, 12)]
    assert events[-1] == (12, 12, "Comparing float and quantized")
    assert [e for e in events if e[2].startswith("Loading")] == [
        (0, 2, "Loading the models: the float model"), (1, 2, "Loading the models: the quantized model"),
        (2, 2, "Loading the models")]
    events.clear()
    api.compare_models(model, onnx.load(out), progress=lambda d, t, m: events.append((d, t, m)))  # no data
    assert events == [(0, 1, "Matching the models"), (1, 1, "Matching the models")]
