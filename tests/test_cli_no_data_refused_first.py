"""quantize without --data on a static preset is refused before the latency placement probes any unit."""

from __future__ import annotations

from workbench.cli import main
from workbench.core.pipeline import latency_placement


def test_quantize_without_data_refuses_before_probing(corpus, tmp_path, capsys, monkeypatch):
    """digits_cnn spent about 2 s on 'Latency placement: probing 2 units' before 'needs calibration data'."""
    probes = []
    for name in ("conv_unit_latency", "matmul_unit_latency", "pool_unit_latency", "make_session"):
        real = getattr(latency_placement, name)
        monkeypatch.setattr(latency_placement, name,
                            lambda *a, _real=real, _name=name, **k: probes.append(_name) or _real(*a, **k))
    d = corpus / "digits_cnn"
    out = tmp_path / "q.onnx"
    capsys.readouterr()
    assert main(["quantize", str(d / "model_opset17.onnx"), "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: Recipe preset 'cpu-u8s8' needs calibration data. No --data given; {d / 'calib.npz'} is beside the "
        f"model: add --data {d / 'calib.npz'}."]
    assert probes == []
    assert not out.exists()
