"""Every figure from onnxruntime says what it was measured with; ``evaluate`` and ``analyze``'s end-to-end
figure agree for the same model and data; the int4 export records MatMulNBits' accuracy level."""

from __future__ import annotations

import re

import numpy as np
import onnx
from qdq_helpers import attention_model

from workbench.cli import main
from workbench.core.analysis.evaluate import evaluate


def _cli(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


def test_evaluate_and_analyze_report_the_same_runtime_and_agree(tmp_path, capsys):
    onnx.save(attention_model(float(np.finfo(np.float32).min)), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "d.npz", X=np.random.default_rng(5).standard_normal((12, 8, 16)).astype(np.float32))
    m, d, q = tmp_path / "m.onnx", tmp_path / "d.npz", tmp_path / "q.onnx"
    assert _cli(["quantize", m, "--data", d, "-o", q], capsys)[0] == 0
    code, ev = _cli(["evaluate", m, q, "--data", d], capsys)
    assert code == 0
    code, an = _cli(["analyze", m, "--data", d], capsys)
    assert code == 0
    ev_rt = re.search(r"measured with (.*)$", ev.splitlines()[0]).group(1)
    an_rt = re.search(r"end to end .*measured with (.*)$", an, re.M).group(1)
    assert ev_rt == an_rt and "CPUExecutionProvider" in ev_rt and "ORT_ENABLE_ALL" in ev_rt
    assert re.search(r"per node unit .*measured with .*ORT_DISABLE_ALL", an)
    ev_db = float(re.search(r"^Y\s+(\S+)", ev, re.M).group(1))
    an_db = float(re.search(r"output Y: SQNR (\S+) dB", an).group(1))
    assert abs(ev_db - an_db) < 0.01 and 10 < ev_db < 60
    # the same figure straight from the API, and the report names the level it ran at
    rep = evaluate(str(m), str(q), str(d))
    assert abs(rep.output("Y").sqnr_db - ev_db) < 0.01 and rep.to_json()["runtime"] == ev_rt
