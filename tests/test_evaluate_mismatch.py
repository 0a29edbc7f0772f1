"""``evaluate`` on a QONNX file, on two unrelated models, and on renamed outputs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _quantize(d, out, *extra):
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-search", "-o", str(out), *extra]) == 0


def test_evaluate_qonnx_file_says_convert(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    q = tmp_path / "m.qonnx.onnx"
    _quantize(d, q, "--format", "qonnx")
    capsys.readouterr()
    assert main(["evaluate", str(d / "model_opset17.onnx"), str(q), "--data", str(d / "eval.npz"),
                 "--samples", "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert f"{q}: the quantized model is a QONNX file" in err
    assert f"workbench-cli convert {q} OUT.onnx --to qdq" in err and "not a registered" not in err


def test_evaluate_models_with_other_inputs_do_not_correspond(corpus, tmp_path, capsys):
    cnn, bert = corpus / "digits_cnn" / "model_opset17.onnx", corpus / "minilm_l6_v2" / "model.onnx"
    names = [i.name for i in ort.InferenceSession(str(bert), providers=["CPUExecutionProvider"]).get_inputs()]
    assert main(["evaluate", str(cnn), str(bert), "--data", str(corpus / "digits_cnn" / "eval.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert f"do not correspond: inputs ['input'] vs {names}" in err


def test_evaluate_renamed_output_is_a_note_and_matches_by_position(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    q = tmp_path / "q.onnx"
    _quantize(d, q)
    m = onnx.load(q)
    old = m.graph.output[0].name
    for n in m.graph.node:
        n.output[:] = ["scores" if o == old else o for o in n.output]
    m.graph.output[0].name = "scores"
    renamed = tmp_path / "renamed.onnx"
    onnx.save(m, renamed)
    capsys.readouterr()
    assert main(["evaluate", str(d / "model_opset17.onnx"), str(renamed), "--data", str(d / "eval.npz"),
                 "--samples", "4"]) == 0
    same = capsys.readouterr()
    assert f"note: output names differ (['{old}'] vs ['scores']); matched by position" in same.err
    assert "warning" not in same.err.lower()
    assert main(["evaluate", str(d / "model_opset17.onnx"), str(q), "--data", str(d / "eval.npz"),
                 "--samples", "4"]) == 0
    plain = capsys.readouterr().out.splitlines()
    # the renamed copy measures the same SQNR as the original file
    row = [line.split()[1:] for line in same.out.splitlines() if line.startswith(old)]
    assert row and row == [line.split()[1:] for line in plain if line.startswith(old)]
    assert np.isfinite(float(row[0][0]))


def test_swapped_arguments_are_said_and_measured_in_the_right_order(corpus, tmp_path, capsys):
    """evaluate QUANTIZED FLOAT warned that the float file is the reference but measured the models as given
    (the quantized file as the reference: another SQNR, its metric in the float column); the figures are now
    the right order's, as the warning says."""
    d = corpus / "digits_cnn"
    q = tmp_path / "q.onnx"
    _quantize(d, q, "--no-latency-check")
    capsys.readouterr()
    common = ["--data", str(d / "eval.npz"), "--samples", "8"]
    assert main(["evaluate", str(q), str(d / "model_opset17.onnx"), *common]) == 0
    swapped = capsys.readouterr()
    assert swapped.err.startswith(f"warning: {q} is quantized and {d / 'model_opset17.onnx'} is not: they look "
                                  "swapped, the float model goes first")
    assert main(["evaluate", str(d / "model_opset17.onnx"), str(q), *common]) == 0
    right = capsys.readouterr()
    assert "warning" not in right.err
    assert swapped.err.splitlines()[0].endswith(f"the figures below take {d / 'model_opset17.onnx'} as the reference")
    assert swapped.out.splitlines()[1:] == right.out.splitlines()[1:]  # the first line says how long it took
    assert right.out.splitlines()[0].startswith("8 samples in ")
    assert np.isfinite(float(next(line for line in right.out.splitlines() if line.startswith("logits")).split()[1]))


def test_the_same_model_twice_is_said(corpus, tmp_path, capsys):
    """evaluate F F (or F and a byte-identical copy) printed SQNR inf without a word; now one warning line,
    and the figures are still the exact ones."""
    d = corpus / "digits_cnn"
    f = d / "model_opset17.onnx"
    copy = tmp_path / "copy.onnx"
    copy.write_bytes(f.read_bytes())
    common = ["--data", str(d / "eval.npz"), "--samples", "4"]
    for other, same in ((f, "is the same file as"), (copy, "has the same bytes as")):
        assert main(["evaluate", str(f), str(other), *common]) == 0
        out = capsys.readouterr()
        warnings = [line for line in out.err.splitlines() if line.startswith("warning")]
        assert warnings == [f"warning: {other} {same} {f}: the figures below compare a model with itself (SQNR "
                            "inf); give the float model and its quantized file (workbench-cli evaluate FLOAT.onnx "
                            "QUANTIZED.onnx)"]
        assert next(line for line in out.out.splitlines() if line.startswith("logits")).split()[1] == "inf"


def test_two_quantized_models_are_said(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    q1, q2 = tmp_path / "q1.onnx", tmp_path / "q2.onnx"
    _quantize(d, q1, "--no-latency-check")
    _quantize(d, q2, "--no-latency-check", "--preset", "s8s8")
    capsys.readouterr()
    assert main(["evaluate", str(q1), str(q2), "--data", str(d / "eval.npz"), "--samples", "4"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {q1} and {q2} are both quantized: the figures below take {q1} as the reference" in err
