"""The sweep's fragments model and its "only quantized" suffixes (float nodes with one unit's Q -> DQ
fragment) run in optimised sessions that keep every QuantizeLinear / DequantizeLinear as written
(``session.disable_quant_qdq``); the "only float" suffixes (the QDQ model's nodes) run as written. The
figures stay those of the whole variant models (tests/test_sensitivity_sweep.py)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from tests.test_sensitivity_sweep import setup as sweep_setup  # noqa: F401 - the fixture tiny reads
from workbench.core.analysis import sensitivity, sweep_tasks
from workbench.core.analysis.executors import InlineExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep
from workbench.core.analysis.sweep_tasks import qdq_kept_session
from workbench.core.runtime.session import QDQ_AS_WRITTEN, make_session


@pytest.fixture
def tiny(sweep_setup):  # noqa: F811 - the imported fixture
    model, _recipe, result, data, x = sweep_setup
    return model, result, data, x


def test_each_task_session_is_optimised_or_as_written_by_what_it_runs(tiny, monkeypatch):
    model, result, data, _x = tiny
    kind: list[str | None] = [None]
    seen: list[tuple[str, bool, dict | None]] = []
    real_make, real_suffix = sweep_tasks.make_session, sensitivity.run_suffix

    def make(proto, **k):
        what = kind[0] or ("fragments" if proto.graph.output[0].name.endswith("#sig") else "cache/float")
        seen.append((what, k["optimize"], k.get("config")))
        return real_make(proto, **k)

    def suffix(task):
        kind[0] = task.kind
        try:
            return real_suffix(task)
        finally:
            kind[0] = None

    monkeypatch.setattr(sweep_tasks, "make_session", make)
    monkeypatch.setattr(sensitivity, "run_suffix", suffix)
    sweep = sensitivity_sweep(model, result, data, samples=None, executor=InlineExecutor())
    quant = [s for s in seen if s[0] == "quant"]
    floats = [s for s in seen if s[0] == "float"]
    assert len(quant) == 4 and all(s[1:] == (True, QDQ_AS_WRITTEN) for s in quant)
    assert len(floats) == sweep.tasks - 4 and all(s[1:] == (False, None) for s in floats)
    assert [s[1:] for s in seen if s[0] == "fragments"] == [(True, QDQ_AS_WRITTEN)]


def test_qdq_kept_session_runs_the_pairs_as_written(tiny):
    model, result, _data, x = tiny
    kept = qdq_kept_session(result.proto)
    options = kept.get_session_options()
    assert options.get_session_config_entry("session.disable_quant_qdq") == "1"
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    written = make_session(result.proto, optimize=False).run(None, {"x": x})[0]
    got = kept.run(None, {"x": x})[0]
    assert float(np.abs(got - written).max()) <= 1e-5 * float(np.abs(written).max())
