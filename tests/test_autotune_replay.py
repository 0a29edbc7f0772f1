"""autotune's last line says `quantize --recipe R --no-auto --no-latency-check` writes the tuned model again: the
same bytes. On the README's digits_transformer example (output SQNR >= 45 dB, 32 calibration and 32 eval rows)
the tuned model was written from ranges cached across the walk's trials; calibrated afresh for the tuned recipe
alone, 3 of its 29 int16 scales came out one float32 ulp apart (onnxruntime fuses the float model differently
depending on which tensors a calibration fetches), so the two files differed."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import onnxruntime as ort
import pytest

from workbench.cli import main


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sqnr(folder, path) -> float:
    """Output SQNR (dB) of the model at ``path`` against float on the first 32 eval rows, one row a run."""
    with np.load(folder / "eval.npz") as z:
        xs = z["input"][:32]
    runs = [ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
            for p in (folder / "model_opset17.onnx", path)]
    f, q = (np.concatenate([s.run(None, {"input": xs[i:i + 1]})[0] for i in range(32)]).astype(np.float64)
            for s in runs)
    return float(10 * np.log10(np.sum(f ** 2) / np.sum((f - q) ** 2)))


@pytest.mark.slow
def test_the_quantize_command_autotune_names_writes_the_same_bytes(corpus, tmp_path, capsys):
    folder = corpus / "digits_transformer"
    model, calib = str(folder / "model_opset17.onnx"), str(folder / "calib.npz")
    tuned, again = tmp_path / "tuned.onnx", tmp_path / "again.onnx"
    assert main(["autotune", model, "--preset", "cpu-u8s8", "--data", calib, "--samples", "32", "--eval",
                 str(folder / "eval.npz"), "--eval-samples", "32", "--metric", "sqnr", "--min-score", "45",
                 "--no-latency-check", "-o", str(tuned)]) == 0
    lines = capsys.readouterr().out.splitlines()
    recipe = tmp_path / "tuned.recipe.json"
    assert lines[-1] == (f"wrote the tuned recipe to {recipe} (quantize --recipe {recipe} --no-auto "
                         f"--no-latency-check writes {tuned} again; --print-recipe prints it here)")
    assert main(["quantize", model, "--data", calib, "--samples", "32", "--recipe", str(recipe), "--no-auto",
                 "--no-latency-check", "-o", str(again)]) == 0
    assert _sha(again) == _sha(tuned)
    # the figure printed after autotune is the written file's own output SQNR (numpy, against float)
    (after,) = [m.group(1) for line in lines if (m := re.match(r"  after autotune ([0-9.]+) ", line))]
    assert float(after) >= 45 and _sqnr(folder, tuned) == pytest.approx(float(after), abs=1e-3)
    # where the walk's trial of that recipe (cached ranges) scored otherwise, a note gives both figures
    notes = [line for line in lines if line.startswith("note: the tuned model written")]
    assert len(notes) <= 1 and all(f"as `quantize --recipe` does) scores {after}; its trial " in n for n in notes)
