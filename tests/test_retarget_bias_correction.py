"""A retarget whose cached ranges are all kept still reads the project's data when its recipe has bias
correction: the Conv input means come from the data, not from the cache. It skipped the data, so the
retargeted model's biases went uncorrected while a replay of its saved project corrected them (digits_cnn,
opset 17 project onto opset 13: the int32 biases of all three Convs differed, f.7.bias 362 vs 328 first)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from workbench import cli


def _bias_and_scale(path, bias: str) -> tuple[np.ndarray, np.ndarray]:
    """(int32 bias, its scale) of the DequantizeLinear reading ``bias`` in the model at ``path``."""
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    dq = next(n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == bias)
    return inits[bias], inits[dq.input[1]]


def test_retarget_replay_and_fresh_quantize_write_the_same_bytes(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    p, r, r2, fresh = (tmp_path / n for n in ("p.wbproj", "r.onnx", "r2.onnx", "fresh.onnx"))
    off = "--no-latency-check"  # the difference is not one of timing: it shows with latency decisions off too
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"),
                     "-o", str(tmp_path / "a.onnx"), "--save-project", str(p), off]) == 0
    assert cli.main(["quantize", str(p), "--model", str(d / "model_opset13.onnx"), "-o", str(r),
                     "--save-project", str(tmp_path / "r.wbproj")]) == 0  # a replay runs no latency check
    text = capsys.readouterr().out
    assert "5 ranges kept (same tensor), 0 dropped" in text  # nothing recalibrated: the data was skipped
    assert cli.main(["quantize", str(tmp_path / "r.wbproj"), "-o", str(r2)]) == 0
    assert cli.main(["quantize", str(d / "model_opset13.onnx"), "--data", str(d / "calib.npz"),
                     "-o", str(fresh), off]) == 0
    assert r.read_bytes() == r2.read_bytes()
    assert r.read_bytes() == fresh.read_bytes()
    # the biases are corrected: not the float bias rounded on its grid
    float_bias = {i.name: numpy_helper.to_array(i) for i in onnx.load(d / "model_opset13.onnx").graph.initializer}
    q, scale = _bias_and_scale(r, "f.7.bias_quantized")
    plain = np.round(float_bias["f.7.bias"].astype(np.float64) / scale.astype(np.float64))
    assert q.dtype == np.int32 and q.shape == plain.shape
    assert np.count_nonzero(q != plain) == q.size
