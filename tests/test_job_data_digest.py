"""``sweep`` and ``report`` name the calibration file by its sha256 twice: in the recipe choice's cache key and in
the sweep job stamp. The job reads and hashes the file once and passes the digest on (it hashed it twice); the
key is the one ``quantize`` stores its choice under, so the choice is still reused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from workbench import cli_choice_cache
from workbench.cli import main
from workbench.core import api
from workbench.core.report import sweep_match


def _count_hashes(monkeypatch) -> list[Path]:
    """Every file :func:`sha256_file` hashes for the choice cache and the sweep stamp, in order."""
    hashed: list[Path] = []
    real = api.sha256_file

    def counting(path):
        hashed.append(Path(path).resolve())
        return real(path)

    monkeypatch.setattr(api, "sha256_file", counting)
    monkeypatch.setattr(sweep_match, "sha256_file", counting)
    return hashed


def test_sweep_hashes_its_data_once_and_reuses_the_choice_quantize_stored(corpus, tmp_path, capsys, monkeypatch):
    d = corpus / "digits_cnn"
    calib = (d / "calib.npz").resolve()
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    common = [str(d / "model_opset17.onnx"), "--data", str(calib), "--samples", "16", "--no-latency-check"]
    assert main(["quantize", *common, "-o", str(tmp_path / "q.onnx")]) == 0
    capsys.readouterr()
    hashed = _count_hashes(monkeypatch)
    out = tmp_path / "sweep.json"
    assert main(["sweep", *common, "--eval-samples", "4", "--json", str(out)]) == 0
    assert hashed.count(calib) == 1
    assert json.loads(out.read_text())["job"]["data"] == hashlib.sha256(calib.read_bytes()).hexdigest()
    chose = [line for line in capsys.readouterr().err.splitlines() if line.startswith("recipe choice")]
    assert len(chose) == 1 and "[reused from an earlier run on the same model, data, samples and recipe, chosen " in chose[0]


def test_a_data_digest_is_of_one_readable_file(tmp_path):
    f = tmp_path / "rows.npz"
    f.write_bytes(b"not read as npz here")
    assert cli_choice_cache.data_digest(str(f)) == hashlib.sha256(b"not read as npz here").hexdigest()
    assert cli_choice_cache.data_digest(f) == cli_choice_cache.data_digest(str(f))
    assert cli_choice_cache.data_digest(str(tmp_path)) is None  # a folder
    assert cli_choice_cache.data_digest(str(tmp_path / "missing.npz")) is None
    assert cli_choice_cache.data_digest(None) is None
