"""quantize's warning that no unit is quantized says where the reasons are. With ``--exclude '*'`` (and the replay
of its project) it said "all 5 were kept float (the reasons are above)" over nothing but the latency note; the
recipe excludes them, and the warning now says so. Where the latency check kept them float its notes are above,
as before (tests/test_latency_microsecond.py)."""

from __future__ import annotations

from workbench.cli import main


def _warning(err: str) -> str:
    found = [line for line in err.splitlines() if line.startswith("warning: no node unit is quantized")]
    assert len(found) == 1, err
    return found[0]


def test_a_recipe_that_excludes_every_unit_is_named_as_the_reason(corpus, tmp_path, capsys, fake_latency):
    fake_latency.quantized_at(0.5)
    d = corpus / "digits_cnn"
    project = tmp_path / "p.wbproj"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-auto", "--exclude", "*", "-o", str(tmp_path / "a.onnx"), "--save-project", str(project)]) == 0
    assert _warning(capsys.readouterr().err) == (
        "warning: no node unit is quantized: all 5 were kept float (the recipe (--exclude, --recipe) excludes them), "
        "so the written model computes in float like the input")
    assert main(["quantize", str(project), "-o", str(tmp_path / "b.onnx")]) == 0
    assert _warning(capsys.readouterr().err) == (
        f"warning: no node unit is quantized: all 5 were kept float ({project}'s recipe excludes them), so the "
        "written model computes in float like the input")
