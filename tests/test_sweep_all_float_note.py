"""`sweep` of a model whose every unit the latency check keeps float says so, not that its units sit in
If/Loop bodies, and prints no bare table header (digits_cnn on a CPU where quantization does not pay
printed "no unit of the main graph to sweep (units inside If/Loop bodies are not measured ...)"). With no unit
quantized the headline says bit-exact, or no quantization noise, never a dB figure: digits_cnn with every unit
excluded printed "137.74 dB output SQNR", the float rounding between the float model run optimised and the
written one run as written."""

from __future__ import annotations

from qdq_helpers import cache_quantized_slower, matmul16_files

from workbench.cli import main


def test_sweep_with_every_unit_kept_float_by_the_latency_check(tmp_path, capsys):
    src, data = matmul16_files(tmp_path)
    cache_quantized_slower(src, data)
    assert main(["sweep", str(src), "--data", str(data), "--no-auto", "--executor", "inline"]) == 0
    out, err = capsys.readouterr()
    assert "note: 1 unit measured slower quantized (in 1 island) is float here, as `quantize` writes them" in err
    assert "note: no unit to sweep: the latency check keeps every quantized unit float (the note above)" in err
    assert "If/Loop" not in err
    lines = out.strip().splitlines()
    assert lines[0].startswith("the quantized model (0 units quantized): ")
    assert lines[1:] == ["  none swept (see the note on stderr)"]  # no bare header


def test_sweep_with_every_unit_excluded(tmp_path, capsys):
    src, data = matmul16_files(tmp_path)
    assert main(["sweep", str(src), "--data", str(data), "--no-auto", "--no-latency-check", "--exclude", "mm",
                 "--executor", "inline"]) == 0
    out, err = capsys.readouterr()
    assert "note: no unit to sweep: every unit is float (the recipe, its exclusions or a guard keep them so)" in err
    assert out.strip().splitlines() == [
        "the quantized model (0 units quantized): bit-exact with the float model, no quantization noise (8 samples)",
        "  none swept (see the note on stderr)"]


def test_sweep_of_a_float_model_that_rounds_differently_gives_no_db_figure(corpus, capsys):
    """digits_cnn runs optimised (Conv+Relu fused) as the float model and as written as the all-float "quantized"
    one: their outputs differ by float rounding, which is no quantization figure."""
    folder = corpus / "digits_cnn"
    assert main(["sweep", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-auto",
                 "--exclude", "*", "--executor", "inline"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["the quantized model (0 units quantized): no quantization noise, it computes in float like the "
                   "float model (8 samples; its outputs differ from the float model's by float rounding at most, no "
                   "SQNR figure)", "  none swept (see the note on stderr)"]


def test_sweep_table_when_units_are_quantized(tmp_path, capsys):
    src, data = matmul16_files(tmp_path)
    assert main(["sweep", str(src), "--data", str(data), "--no-auto", "--no-latency-check",
                 "--executor", "inline"]) == 0
    out, err = capsys.readouterr()
    assert "no unit" not in err
    lines = out.strip().splitlines()
    assert lines[1].split()[:2] == ["node", "op"] and lines[2].split()[0] == "mm"
