"""CLI messages from a fresh-user run: an empty table says why."""

from __future__ import annotations

import io

from bundled_example import EXAMPLE

from workbench.cli import TerminalProgress, main


def test_analyze_of_a_model_whose_units_all_sit_in_subgraphs_says_why_the_table_is_empty(corpus, tmp_path, capsys):
    folder = corpus / "silero_vad"
    rc = main(["analyze", str(folder / "silero_vad.onnx"), "--data", str(folder / "calib.npz"), "--samples", "8",
               "--eval-samples", "4"])
    out = capsys.readouterr()
    assert rc == 0
    assert "no unit of the main graph to measure" in out.err
    lines = out.out.strip().splitlines()
    assert lines[-1] == "  none measured (see the note on stderr)"  # after the end-to-end lines; no bare header
    assert not any(line.split()[:2] == ["node", "op"] for line in lines)


def test_analyze_says_how_many_rows_it_left_out(corpus, capsys):
    folder = corpus / "digits_cnn"
    rc = main(["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--samples", "16",
               "--eval-samples", "8", "--top", "2", "--no-auto", "--no-latency-check"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    header = next(i for i, line in enumerate(out) if line.split()[:2] == ["node", "op"])
    assert len(out[header + 1:header + 3]) == 2
    assert out[header + 3] == "(2 of 5 units shown, worst first; --top N for more, --json for all)"


def test_progress_shows_an_eta_only_once_there_is_one():
    out = io.StringIO()
    p = TerminalProgress(stream=out)
    p(0, 4, "Calibrating")
    p(2, 4, "Calibrating")  # same message: not a new line when not a terminal
    p(4, 4, "Calibrating")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[") and lines[0].endswith("] 0/4 Calibrating (0s)")  # elapsed, no "ETA 0s"
    assert lines[-1].endswith("] 4/4 Calibrating (0s)")
    assert "ETA" not in out.getvalue()


def test_a_model_whose_units_all_stay_float_is_counted_alike_by_quantize_inspect_and_cost(corpus, tmp_path, capsys):
    """silero_vad.onnx keeps its 12 Convs inside If branches, where quantize keeps them float (only
    their weight would be quantized). quantize said '0 of 0 node units', inspect --units listed 12
    without saying so and cost claimed BOPs / 16 and 0.18 MB of weights."""
    folder = corpus / "silero_vad"
    model = str(folder / "silero_vad.onnx")
    assert main(["quantize", model, "--data", str(folder / "calib.npz"), "--samples", "4", "--no-latency-check",
                 "--no-auto", "-o", str(tmp_path / "q.onnx")]) == 0
    out = capsys.readouterr()
    assert "(0 of 12 node units quantized" in out.out
    assert "no node unit is quantized: all 12 were kept float" in out.err
    assert main(["inspect", model, "--units"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("units:"))
    assert line.endswith("Conv 12 (12 of them kept float by quantize's default guards: 12 weight-only)")
    assert main(["cost", model, "--data", str(folder / "calib.npz")]) == 0
    out = capsys.readouterr().out
    # 1.239 MB with the decoder LSTM's weights (0.710 MB was the Convs alone), as silero_vad_op18_ifless.onnx counts
    assert "recipe cpu-u8s8: BOPs / 1.0 (as onnxruntime runs them: / 1.0), weight memory 1.239 MB -> 1.239 MB" in out
    assert "note: 12 units of the recipe counted float, as `quantize` keeps them by default (12 weight-dq-only" in out


def test_a_moved_model_is_found_again_as_the_error_says_and_analyze_takes_the_new_project(corpus, tmp_path, capsys):
    """The hint named `quantize ... --model PATH`, which analyze, sweep and report do not take; it now
    says to save a new project, and that project works for them (the written model is the same)."""
    import shutil

    folder = corpus / "digits_cnn"
    model = tmp_path / "m.onnx"
    shutil.copy(folder / "model_opset17.onnx", model)
    common = ["--no-latency-check"]
    assert main(["quantize", str(model), "--data", str(folder / "calib.npz"), "--samples", "8", "-o",
                 str(tmp_path / "q.onnx"), "--save-project", str(tmp_path / "job.wbproj"), *common]) == 0
    (tmp_path / "moved").mkdir()
    model.rename(tmp_path / "moved" / "m.onnx")
    capsys.readouterr()
    eval_args = ["--eval", str(folder / "eval.npz"), "--eval-samples", "4"]
    assert main(["analyze", str(tmp_path / "job.wbproj"), *eval_args]) == 2
    err = capsys.readouterr().err
    assert "--model PATH -o OUT.onnx --save-project NEW.wbproj (analyze, sweep and report then take NEW.wbproj" in err
    assert main(["quantize", str(tmp_path / "job.wbproj"), "--model", str(tmp_path / "moved" / "m.onnx"), "-o",
                 str(tmp_path / "q2.onnx"), "--save-project", str(tmp_path / "new.wbproj")]) == 0
    assert (tmp_path / "q2.onnx").read_bytes() == (tmp_path / "q.onnx").read_bytes()
    assert main(["analyze", str(tmp_path / "new.wbproj"), *eval_args]) == 0


def test_nan_rows_in_calibration_data_are_reported_once_as_cli_warnings(cases, tmp_path, capsys):
    """Case 05: the recipe choice's first-rows result repeated the full pass's warnings (a subset:
    'sample 2' after 'sample 2, sample 4'), and log records printed as 'WARNING ...'."""
    assert main(["quantize", str(cases / "05_nan_inf_calibration.onnx"), "--data",
                 str(cases / "05_nan_inf_calibration.npz"), "-o", str(tmp_path / "q.onnx"), "--no-latency-check"]) == 0
    err = capsys.readouterr().err
    calib = [line for line in err.splitlines() if "Calibration:" in line]
    # the data's bad samples once, then the tensors they reach in one line (each had a line of the same samples)
    assert calib == [
        "warning: Calibration: input 'X' of the calibration data holds NaN/Inf: sample 2 (1), sample 4 (1). Check "
        "the calibration data.",
        "warning: Calibration: NaN/Inf of the calibration data left out of the ranges of the 2 tensors they reach: "
        "X, Y."]


def test_quantize_names_an_array_of_the_data_that_is_not_a_model_input(corpus, tmp_path, capsys):
    """A misspelt input name in the calibration file went unseen (evaluate said it, quantize did not)."""
    import numpy as np

    folder = corpus / "digits_cnn"
    with np.load(folder / "calib.npz") as z:
        np.savez(tmp_path / "calib.npz", junk=np.zeros(3), **{k: z[k][:8] for k in z.files})
    assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(tmp_path / "calib.npz"), "-o",
                 str(tmp_path / "q.onnx"), "--no-latency-check", "--no-auto"]) == 0
    err = capsys.readouterr().err
    assert f"note: {tmp_path / 'calib.npz'}: array 'junk' is not a model input; ignored." in err


def test_recipe_that_is_not_utf8_json_or_is_a_project_is_one_line(tmp_path, capsys):
    """--recipe given a model file, a Latin-1 JSON file or a project: one line naming the file and what to
    give (a model file printed a UnicodeDecodeError traceback; a project 'unknown field allow_code')."""
    import shutil

    model, data = tmp_path / "m.onnx", tmp_path / "calib.npz"
    shutil.copy(EXAMPLE / "digits_cnn.onnx", model)
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", data)
    latin = tmp_path / "lat.json"
    latin.write_bytes(b'{"exclude": ["\xe9"]}')
    proj = tmp_path / "job.wbproj"
    assert main(["quantize", str(model), "--data", str(data), "--samples", "8", "-o", str(tmp_path / "q.onnx"),
                 "--save-project", str(proj), "--no-latency-check"]) == 0
    capsys.readouterr()
    for recipe, says in ((model, "not a recipe (not UTF-8 JSON text"), (latin, "not a recipe (not UTF-8 JSON text"),
                         (proj, "is a project, not a recipe")):
        for verb in ("quantize", "analyze"):
            out = ["-o", str(tmp_path / "x.onnx")] if verb == "quantize" else []
            assert main([verb, str(model), "--recipe", str(recipe), "--data", str(data), *out]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and err[0].startswith(f"error: {recipe}") and says in err[0], err
    assert not (tmp_path / "x.onnx").exists()


def test_progress_items_in_parentheses_stay_one_phase(monkeypatch):
    """"Sweeping units (NODE)" names a new node each step; the ETA is the phase's pace, not restarted per
    node (the sweep read "ETA 0s" from 3/90 to 87/90)."""
    from workbench import cli

    clock = iter([0.0, 0.0, 2.0, 4.0, 5.0])
    monkeypatch.setattr(cli.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    p = TerminalProgress(stream=out)
    p(0, 4, "Sweeping units")
    p(1, 4, "Sweeping units (p2o.Conv.2)")
    p(2, 4, "Sweeping units (p2o.Add.9)")  # 4 s for half the phase: 4 s to go
    p(3, 4, "Calibrating (x)")  # another phase starts its own clock: 0 s in, 3/4 done
    lines = out.getvalue().splitlines()
    assert lines[1].endswith("1/4 Sweeping units (p2o.Conv.2) (ETA 6s)")
    assert lines[2].endswith("2/4 Sweeping units (p2o.Add.9) (ETA 4s)")
    assert lines[3].endswith("3/4 Calibrating (x) (ETA 0s)")


def test_quantize_and_analyze_say_which_names_they_changed(tmp_path, capsys):
    """Two unnamed MatMuls and two nodes both named 'dup' (case 24): the written model names them
    MatMul_0, MatMul_1, dup_0, dup_1; quantize and analyze say so (only inspect did)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = [numpy_helper.from_array(rng.normal(0, 0.3, (16, 16)).astype(np.float32), f"w{i}") for i in range(2)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"]), helper.make_node("Relu", ["a"], ["b"], name="dup"),
             helper.make_node("MatMul", ["b", "w1"], ["c"]), helper.make_node("Relu", ["c"], ["y"], name="dup")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])], w)
    model, data, out = tmp_path / "m.onnx", tmp_path / "d.npz", tmp_path / "q.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
    np.savez(data, x=rng.normal(0, 1, (8, 16)).astype(np.float32))
    want = [f"note: {model}: Named 2 unnamed nodes. The output uses the new names (inspect lists them).",
            f"note: {model}: Node name 'dup' was shared by 2 nodes, renamed dup_0, dup_1. The output uses the new "
            "names (inspect lists them)."]
    assert main(["quantize", str(model), "--data", str(data), "-o", str(out), "--no-latency-check"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert all(line in err for line in want), err
    assert {"MatMul_0", "MatMul_1", "dup_0", "dup_1"} <= {n.name for n in onnx.load(out).graph.node}
    assert main(["analyze", str(model), "--data", str(data), "--no-latency-check"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert all(line in err for line in want), err


def test_a_data_folder_of_several_files_is_named_file_by_file(tmp_path, capsys):
    """--data FOLDER with calib.npz beside eval.npz reads both (550 rows on digits_cnn): the note names each
    file and its rows, so an evaluation split swept into calibration is seen."""
    import shutil

    import numpy as np

    folder = tmp_path / "data"
    folder.mkdir()
    model = tmp_path / "m.onnx"
    shutil.copy(EXAMPLE / "digits_cnn.onnx", model)
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", folder / "calib.npz")
    shutil.copy(EXAMPLE / "digits_cnn_eval.npz", folder / "eval.npz")
    rows = [len(next(iter(np.load(folder / f).values()))) for f in ("calib.npz", "eval.npz")]
    assert main(["quantize", str(model), "--data", str(folder), "-o", str(tmp_path / "q.onnx"),
                 "--no-latency-check", "--no-auto"]) == 0
    err = capsys.readouterr().err
    assert (f"note: {folder}: reading 2 files in name order: calib.npz ({rows[0]} rows), eval.npz ({rows[1]} rows); "
            "give one file instead of the folder to use only its rows.") in err


def test_json_outputs_say_where_they_were_written(tmp_path, capsys, fake_latency):
    """analyze --json and sweep --json name the file on stderr (stdout is the table), autotune names its
    curve beside the model; they wrote silently, while compare and render said 'wrote'."""
    fake_latency.quantized_at(0.5)  # autotune's tuned model measured faster, as on a quiet machine
    import json

    model, data = str(EXAMPLE / "digits_cnn.onnx"), str(EXAMPLE / "digits_cnn_calib.npz")
    rows, sweep, curve, out = (tmp_path / n for n in ("rows.json", "sweep.json", "curve.json", "t.onnx"))
    assert main(["analyze", model, "--data", data, "--samples", "16", "--json", str(rows), "--no-latency-check"]) == 0
    assert f"wrote {rows}" in capsys.readouterr().err.splitlines() and json.loads(rows.read_text())
    assert main(["sweep", model, "--data", data, "--samples", "8", "--top", "1", "--json", str(sweep),
                 "--executor", "inline", "--no-latency-check"]) == 0
    assert f"wrote {sweep}" in capsys.readouterr().err.splitlines() and json.loads(sweep.read_text())["rows"]
    assert main(["autotune", model, "--data", data, "--samples", "16", "--eval", data, "--eval-samples", "8",
                 "--metric", "sqnr", "--min-score", "10", "--max-trials", "2", "-o", str(out),
                 "--curve-json", str(curve)]) in (0, 1)
    assert f"wrote {out} and {curve}" in capsys.readouterr().out.splitlines() and json.loads(curve.read_text())
