"""Bad input through the CLI: one line naming the file/tensor and what to do, exit 2, no output file,
input model byte-identical afterwards (issue: engine, show 8)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _model(path: Path, external: bool = False) -> Path:
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32), "W")
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    if external:
        onnx.save(m, str(path), save_as_external_data=True, location=path.name + ".data", size_threshold=0)
    else:
        onnx.save(m, str(path))
    return path


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _run(capsys, argv) -> tuple[int, list[str]]:
    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    return code, err


def _npz(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


GOOD_X = np.random.default_rng(1).random((6, 1, 3, 8, 8)).astype(np.float32)


@pytest.mark.parametrize("kind", ["truncated", "not_onnx", "empty"])
def test_unreadable_model(tmp_path, capsys, kind):
    model = _model(tmp_path / "m.onnx")
    data = model.read_bytes()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes({"truncated": data[: len(data) // 2], "not_onnx": b"hello, not a model", "empty": b""}[kind])
    before = _digest(bad)
    out = tmp_path / "out.onnx"
    code, err = _run(capsys, ["quantize", str(bad), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)),
                              "-o", str(out)])
    assert code == 2 and len(err) == 1
    assert "bad.onnx" in err[0]
    assert not out.exists()
    assert _digest(bad) == before


def test_missing_external_data(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx", external=True)
    (tmp_path / "m.onnx.data").unlink()
    out = tmp_path / "out.onnx"
    code, err = _run(capsys, ["quantize", str(model), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)),
                              "-o", str(out)])
    assert code == 2 and len(err) == 1
    assert "m.onnx.data" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("arrays,needle", [
    ({"not_x": GOOD_X}, "'x'"),
    ({"x": np.random.default_rng(2).random((6, 1, 5, 8, 8)).astype(np.float32)}, "'x'"),
    ({"x": np.ones((6, 1, 3, 8, 8), dtype=np.int32)}, "'x'"),
    ({"x": np.zeros((0, 1, 3, 8, 8), dtype=np.float32)}, "sample"),
])
def test_bad_calibration_data(tmp_path, capsys, arrays, needle):
    model = _model(tmp_path / "m.onnx")
    before = _digest(model)
    npz = _npz(tmp_path / "calib.npz", **arrays)
    out = tmp_path / "out.onnx"
    code, err = _run(capsys, ["quantize", str(model), "--data", str(npz), "-o", str(out)])
    assert code == 2 and len(err) == 1, err
    assert "calib.npz" in err[0] and needle in err[0]
    assert not out.exists()
    assert _digest(model) == before


def test_good_run_writes_output_and_keeps_input(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    before = _digest(model)
    out = tmp_path / "out.onnx"
    code = main(["quantize", str(model), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)), "-o", str(out)])
    assert code == 0 and out.exists()
    assert _digest(model) == before
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert ops.count("Conv") == 1 and ops.count("QuantizeLinear") == 2 and ops.count("DequantizeLinear") == 3
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    shutil.rmtree(tmp_path)


def test_output_onto_the_input_model_is_refused(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    before = _digest(model)
    data = str(_npz(tmp_path / "c.npz", x=GOOD_X))
    for target in (model, tmp_path / "sub" / ".." / "m.onnx"):
        code, err = _run(capsys, ["quantize", str(model), "--data", data, "-o", str(target)])
        assert code == 2 and len(err) == 1 and "this is an input file" in err[0]
    assert _digest(model) == before


def test_output_onto_external_data_of_the_input_is_refused(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx", external=True)
    data_file = tmp_path / "m.onnx.data"
    before = _digest(data_file)
    code, err = _run(capsys, ["quantize", str(model), "--preset", "dynamic-u8", "-o", str(data_file)])
    assert code == 2 and len(err) == 1 and "this is an input file" in err[0]
    assert _digest(data_file) == before


def test_convert_in_place_is_refused(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    q = tmp_path / "q.onnx"
    assert main(["quantize", str(model), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)), "-o", str(q)]) == 0
    before = _digest(q)
    code, err = _run(capsys, ["convert", str(q), str(q), "--to", "qonnx"])
    assert code == 2 and len(err) == 1 and "q.onnx" in err[0]
    assert _digest(q) == before


def test_unwritable_project_path_is_refused_before_any_output(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    out = tmp_path / "out.onnx"
    code, err = _run(capsys, ["quantize", str(model), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)),
                              "-o", str(out), "--save-project", str(tmp_path / "missing" / "job.wbproj")])
    assert code == 2 and len(err) == 1 and "missing" in err[0]
    assert not out.exists()


def test_saved_project_gets_the_usual_file_mode(tmp_path):
    import os

    model = _model(tmp_path / "m.onnx")
    project = tmp_path / "job.wbproj"
    assert main(["quantize", str(model), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)),
                 "-o", str(tmp_path / "out.onnx"), "--save-project", str(project)]) == 0
    mask = os.umask(0)
    os.umask(mask)
    assert project.stat().st_mode & 0o777 == 0o666 & ~mask  # mkstemp alone gave 0o600


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_sample_count_must_be_a_positive_integer(tmp_path, capsys, value):
    model = _model(tmp_path / "m.onnx")
    with pytest.raises(SystemExit) as exc:
        main(["quantize", str(model), "--data", str(_npz(tmp_path / "c.npz", x=GOOD_X)), "--samples", value,
              "-o", str(tmp_path / "out.onnx")])
    assert exc.value.code == 2
    assert "--samples" in capsys.readouterr().err and not (tmp_path / "out.onnx").exists()


def test_convert_of_a_float_model_says_nothing_to_convert(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    before = _digest(model)
    for to in ("qonnx", "qdq"):
        out = tmp_path / f"out_{to}.onnx"
        code, err = _run(capsys, ["convert", str(model), str(out), "--to", to])
        assert code == 2 and len(err) == 1 and "nothing to convert" in err[0] and "m.onnx" in err[0], err
        assert not out.exists()
    assert _digest(model) == before


def test_output_onto_the_calibration_data_or_another_output_is_refused(tmp_path, capsys):
    """Found by a fresh-user run: -o onto the calibration npz replaced it; -o and --save-project on one
    path left only the project."""
    model = _model(tmp_path / "m.onnx")
    data = _npz(tmp_path / "c.npz", x=GOOD_X)
    before = _digest(data)
    code, err = _run(capsys, ["quantize", str(model), "--data", str(data), "-o", str(data)])
    assert code == 2 and len(err) == 1 and "this is an input file" in err[0] and "c.npz" in err[0]
    assert _digest(data) == before
    out = tmp_path / "o.onnx"
    code, err = _run(capsys, ["quantize", str(model), "--data", str(data), "-o", str(out), "--save-project", str(out)])
    assert code == 2 and len(err) == 1 and "--output and as --save-project" in err[0]
    assert not out.exists()


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["quantize", "m.onnx", "--samples", "0"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: workbench-cli quantize: argument --samples: 0: give 1 or more (see workbench-cli quantize --help)"]


def test_convert_says_why_there_is_nothing_to_convert(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    data = str(_npz(tmp_path / "c.npz", x=GOOD_X))
    qdq, dyn = tmp_path / "q.onnx", tmp_path / "d.onnx"
    assert main(["quantize", str(model), "--data", data, "-o", str(qdq)]) == 0
    assert main(["quantize", str(model), "--preset", "dynamic-u8", "-o", str(dyn)]) == 0
    capsys.readouterr()
    for src, to, expected in ((qdq, "qdq", "already a QDQ model"), (dyn, "qonnx", "quantized dynamically")):
        code, err = _run(capsys, ["convert", str(src), str(tmp_path / "out.onnx"), "--to", to])
        assert code == 2 and len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "out.onnx").exists()


def test_all_nan_calibration_data_is_refused(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    out = tmp_path / "o.onnx"
    code, err = _run(capsys, ["quantize", str(model), "--data", str(_npz(tmp_path / "nan.npz", x=GOOD_X * np.nan)),
                              "-o", str(out)])
    assert code == 2 and len(err) == 1 and "no finite value for input 'x'" in err[0], err
    assert not out.exists()


def test_progress_lines_without_a_terminal():
    import io

    from workbench.cli import TerminalProgress

    out = io.StringIO()
    p = TerminalProgress(stream=out)
    p(0, 0, "Ranking units")
    p(1, 0, "1 units promoted: metric 0.9667")
    p(1, 4, "Calibrating")
    p(2, 4, "Calibrating")  # same message: not repeated ...
    p(4, 4, "Calibrating")  # ... until it is done
    lines = out.getvalue().splitlines()
    assert [ln.rsplit(" (", 1)[0] for ln in lines[:2]] == ["Ranking units", "1 units promoted: metric 0.9667"]
    assert len(lines) == 4 and lines[2].startswith("[") and " 1/4 Calibrating" in lines[2] and " 4/4 " in lines[3]


def test_output_under_a_file_names_it(tmp_path, capsys):
    model = _model(tmp_path / "m.onnx")
    code, err = _run(capsys, ["quantize", str(model), "--preset", "dynamic-u8", "-o", str(model / "out.onnx")])
    assert code == 2 and len(err) == 1 and "is a file, not a folder" in err[0]


def test_output_onto_a_folder_is_refused_before_any_work(tmp_path, capsys):
    from workbench.cli import main

    model = tmp_path / "missing.onnx"  # never opened: the output check comes first
    rc = main(["quantize", str(model), "--data", str(tmp_path / "d.npz"), "-o", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "is a folder" in err[0] and str(tmp_path) in err[0]


def test_processes_executor_needs_a_positive_count():
    import pytest

    from workbench.core.analysis.executors import make_executor
    from workbench.core.errors import WorkbenchError

    for spec in ("processes:0", "processes:-1"):
        with pytest.raises(WorkbenchError, match="1 or more"):
            make_executor(spec)


@pytest.mark.parametrize("verb", ["quantize", "analyze", "sweep"])
def test_a_bad_executor_is_refused_before_any_work(tmp_path, capsys, verb):
    """A misspelt --executor was refused only after calibration and the recipe choice (3-4 s on ppocrv4_rec);
    now before the model is even opened (the model path here does not exist, and is not what is reported)."""
    argv = [verb, str(tmp_path / "missing.onnx"), "--data", str(tmp_path / "missing.npz"), "--executor", "proccesses:2"]
    if verb == "quantize":
        argv += ["-o", str(tmp_path / "out.onnx")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: Unknown executor 'proccesses:2'. Use inline, processes[:N], ray or ray:ADDRESS."]


def test_no_command_prints_usage_and_fails(capsys):
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "usage: workbench-cli" in captured.err
