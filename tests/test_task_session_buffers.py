"""A sweep task's session takes every initializer of TASK_BUFFER_BYTES or more as a buffer used in place
(not serialised and parsed back), and computes bit for bit what a session from the model's bytes computes."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

from tests.test_ort_session import _model
from workbench.core.analysis.sweep_tasks import TASK_BUFFER_BYTES, task_session
from workbench.core.io import ort_session


def test_task_session_hands_over_small_weights_as_buffers(monkeypatch):
    proto = _model(rows=64)  # w, c: 16 KiB each (under the 1 MiB of other sessions), b: 256 bytes
    assert TASK_BUFFER_BYTES <= 64 * 64 * 4
    split = []
    real = ort_session.session_sources
    monkeypatch.setattr(ort_session, "session_sources", lambda p, *a: split.append(real(p, *a)) or split[-1])
    session = task_session(proto, optimize=False)
    (lean, sources), = split
    assert sorted(sources) == ["workbench_0.data", "workbench_1.data"]  # w and c; b stays inline
    assert sources["workbench_0.data"] == proto.graph.initializer[0].raw_data
    assert lean.graph.initializer[1] == proto.graph.initializer[1]
    assert real(proto)[1] == {}  # other sessions: nothing under 1 MiB is a buffer

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    from_bytes = ort.InferenceSession(proto.SerializeToString(), so)
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((5, 64)).astype(np.float32), "t": rng.standard_normal((64, 64)).astype(np.float32)}
    for got, want in zip(session.run(None, feed), from_bytes.run(None, feed), strict=True):
        assert np.array_equal(got, want)
