"""The CLI quantize: onnx.checker once, on the bytes it writes, before the file lands; its last line."""

from __future__ import annotations

import numpy as np
import onnx.checker

from workbench.cli import _print_issues, main
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.tuning import recipe_choice


def test_quantize_checks_the_written_file_once_and_a_failure_writes_nothing(corpus, tmp_path, monkeypatch, capsys):
    folder = corpus / "digits_cnn"
    real = onnx.checker.check_model
    calls: list[object] = []

    def checker(model, *a, **k):
        calls.append(model)
        if isinstance(model, bytes):  # only the written model is checked as serialised bytes
            raise onnx.checker.ValidationError("made to fail by the test")
        return real(model, *a, **k)

    monkeypatch.setattr(onnx.checker, "check_model", checker)
    out = tmp_path / "quantized.onnx"
    args = ["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "-o", str(out),
            "--no-latency-check", "--no-auto"]
    rc = main(args)
    err = capsys.readouterr().err
    assert rc != 0
    assert "fails onnx.checker: made to fail by the test" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing half-written is left
    written = [c for c in calls if not isinstance(c, str | bytes) and len(c.graph.node) and any(
        n.op_type == "QuantizeLinear" for n in c.graph.node)]
    assert written == []  # the in-memory quantized model was not checked a second time
    assert sum(isinstance(c, bytes) for c in calls) == 1
    assert not any(isinstance(c, str) for c in calls)  # the written file is not read back to be checked


def test_the_checked_bytes_are_the_written_file_serialised_once(corpus, tmp_path, monkeypatch):
    folder = corpus / "digits_cnn"
    real = onnx.checker.check_model
    checked: list[bytes] = []

    def checker(model, *a, **k):
        if isinstance(model, bytes | str):
            checked.append(model)
        return real(model, *a, **k)

    def no_save(*a, **k):
        raise AssertionError("onnx.save_model serialises the model again")

    monkeypatch.setattr(onnx.checker, "check_model", checker)
    monkeypatch.setattr(onnx, "save_model", no_save)
    out = tmp_path / "quantized.onnx"
    assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "-o", str(out),
                 "--no-latency-check", "--no-auto"]) == 0
    assert checked == [out.read_bytes()]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quantized.onnx"]


def test_the_last_line_names_the_recipe_choice(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    base = ["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-latency-check"]
    assert main([*base, "-o", str(tmp_path / "a.onnx")]) == 0
    out = capsys.readouterr()
    chosen = next(line for line in out.err.splitlines() if line.startswith("recipe choice: ")).split()[2]
    assert chosen in ("preset", "mse", "compute+mse")
    assert out.out.strip().splitlines()[-1].endswith(f"preset cpu-u8s8, recipe choice: {chosen})")
    assert main([*base, "-o", str(tmp_path / "b.onnx"), "--no-auto"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("wrote ") and last.endswith("preset cpu-u8s8)")


def test_samples_beyond_the_data_are_noted(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    calib = folder / "calib.npz"
    with np.load(calib) as z:
        rows = z["input"].shape[0]  # 100
    args = ["quantize", str(folder / "model_opset17.onnx"), "--data", str(calib), "--no-latency-check", "--no-auto"]
    assert main([*args, "-o", str(tmp_path / "a.onnx"), "--samples", "5000"]) == 0
    assert f"note: --samples 5000 asks for more samples than {calib} holds ({rows}); using all {rows}" \
        in capsys.readouterr().err
    assert main([*args, "-o", str(tmp_path / "b.onnx"), "--samples", str(rows)]) == 0
    assert "asks for more samples" not in capsys.readouterr().err
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_the_samples_note_never_fails_a_job_that_does_not_read_the_data(corpus, tmp_path, capsys):
    """dynamic-u8 never reads --data: data that does not fit the model was fine before the note."""
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, foo=np.zeros((4, 3), np.float32))
    rc = main(["quantize", str(corpus / "digits_cnn" / "model_opset13.onnx"), "--preset", "dynamic-u8", "--data",
               str(wrong), "--samples", "5", "--no-latency-check", "-o", str(tmp_path / "w.onnx")])
    assert rc == 0 and (tmp_path / "w.onnx").is_file()
    assert "asks for more samples" not in capsys.readouterr().err


def test_float_islands_share_one_line(corpus, tmp_path, capsys):
    """nudenet_320n's box decoding after its anchor grid (kept float by the size guard, one warning for its 11
    units) reaches no quantized Conv: one note for the 8 element-wise islands, not eight. (minilm_l6_v2 showed
    this with 3 islands until the size guard reported its position-embedding Add itself.)"""
    folder = corpus / "nudenet_320n"
    assert main(["quantize", str(folder / "model.onnx"), "--data", str(folder / "calib.npz"), "--no-latency-check",
                 "--no-auto", "-o", str(tmp_path / "q.onnx")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "note: 8 element-wise nodes kept in float (/model.22/Add_2, /model.22/Add_5, /model.22/Add_8, " \
           "/model.22/Concat_23, /model.22/Add_11, /model.22/Concat_24, /model.22/Mul_5, /model.22/Concat_25): they " \
           "reach no quantized Conv/MatMul/Gemm, so onnxruntime gains no integer kernel and quantizing them " \
           "would only add rounding; name a node in an override to quantize it anyway" in err
    assert not [line for line in err if "kept in float: it reaches no quantized" in line]
    assert [line for line in err if "computed from the input's size" in line] == [
        "warning: /model.22/Add: kept in float: 11 units quantizing tensors computed from the input's size (first: "
        "'/model.22/Range_output_0'); ranges calibrated at one size do not hold at another"]


def test_two_float_islands_keep_their_own_lines(capsys):
    _print_issues([PlanIssue("a", "info", "kept in float: it reaches no quantized Conv/MatMul/Gemm",
                             code=IssueCode.FLOAT_ISLAND),
                   PlanIssue("b", "info", "kept in float: it reaches no quantized Conv/MatMul/Gemm",
                             code=IssueCode.FLOAT_ISLAND),
                   PlanIssue("c", "warning", "something else", code=IssueCode.SENTINEL_RANGE)])
    assert capsys.readouterr().err.splitlines() == [
        "note: a: kept in float: it reaches no quantized Conv/MatMul/Gemm",
        "note: b: kept in float: it reaches no quantized Conv/MatMul/Gemm", "warning: c: something else"]


def test_an_already_quantized_model_is_refused_before_any_calibration(corpus, tmp_path, capsys, monkeypatch):
    def no_calibration(*a, **k):
        raise AssertionError("calibrated an already-quantized model")

    monkeypatch.setattr(recipe_choice, "calibrate_split", no_calibration)
    folder = corpus / "ddddocr_common_old_int8"
    data = tmp_path / "x.npz"
    np.savez(data, input1=np.zeros((8, 1, 64, 256), np.float32))
    rc = main(["quantize", str(folder / "model.onnx"), "--data", str(data), "-o", str(tmp_path / "q.onnx")])
    err = capsys.readouterr().err
    assert rc == 2 and "is already quantized (dynamic)" in err and "Quantize the float model instead" in err
    assert not (tmp_path / "q.onnx").exists()


def test_a_model_with_nothing_quantized_is_said_so(corpus, tmp_path, capsys):
    """A new user's wrong --data left every island float after the latency fallback: the CLI said only
    "wrote ... (0 quantized node units ...)"."""
    folder = corpus / "digits_cnn"
    rc = main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--exclude", "*",
               "--no-latency-check", "--no-auto", "-o", str(tmp_path / "q.onnx")])
    out = capsys.readouterr()
    assert rc == 0
    assert out.err == "warning: no node unit is quantized: all 5 were kept float (the recipe (--exclude, --recipe) " \
                      "excludes them), so the written model computes in float like the input\n"  # nothing above it
    assert out.out.strip().splitlines()[-1] == f"wrote {tmp_path / 'q.onnx'} (0 of 5 node units quantized, preset cpu-u8s8)"


def test_three_issues_of_one_kind_print_the_first_and_name_the_rest(capsys):
    warn = [PlanIssue(n, "warning", f"kept in float: tensor 't{n}' reaches |3.4e+38|", code=IssueCode.SENTINEL_RANGE)
            for n in ("a", "b", "c")]
    _print_issues([PlanIssue("", "info", "latency quantized / float = 0.40", code=IssueCode.LATENCY), *warn])
    assert capsys.readouterr().err.splitlines() == [
        "note: latency quantized / float = 0.40",
        "warning: a: kept in float: tensor 'ta' reaches |3.4e+38|",
        "warning: 2 more nodes likewise (sentinel-range): b, c"]
