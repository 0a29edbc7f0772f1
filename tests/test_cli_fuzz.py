"""A bounded fuzz harness over the CLI: mutated ONNX, npz and project files through ``quantize``
(and ``inspect``), in process, with deterministic seeds.

For every case: exit status 0 or 2 (never a traceback), done within the alarm (no hang), stderr's
error is one line, the output folder holds nothing but a complete output on success (no partial or
temp file; a written model passes onnx.checker), and every input file has its sha256 of before.
The counts are printed (``pytest -s``).
"""

from __future__ import annotations

import hashlib
import io
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import alarm

from workbench.cli import main

#: Mutated inputs per kind (ONNX bytes, ONNX fields, npz bytes, project JSON): 320 in all.
CASES = {"onnx-bytes": 90, "onnx-fields": 70, "npz": 70, "project": 90}
CASE_TIMEOUT = 30
OUTCOMES: Counter = Counter()


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "Wc"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "Bc"),
             numpy_helper.from_array(np.array([-1, 64], np.int64), "shape"),
             numpy_helper.from_array(rng.standard_normal((64, 5)).astype(np.float32), "Wm")]
    nodes = [helper.make_node("Conv", ["X", "Wc", "Bc"], ["C"], name="conv", kernel_shape=[3, 3]),
             helper.make_node("Relu", ["C"], ["R"], name="relu"),
             helper.make_node("Reshape", ["R", "shape"], ["F"], name="flat"),
             helper.make_node("MatMul", ["F", "Wm"], ["Y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 1, 6, 6])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


MODEL = _model().SerializeToString()


def _npz(x) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, X=x)
    return buf.getvalue()


NPZ = _npz(np.random.default_rng(1).standard_normal((6, 1, 6, 6)).astype(np.float32))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_case(folder: Path, argv: list[str], inputs: list[Path], kind: str, capsys) -> None:
    before = {p: _digest(p) for p in inputs}
    existing = {p.name for p in folder.iterdir()}
    out = folder / "out.onnx"
    try:
        with alarm(CASE_TIMEOUT):
            code = main(argv)
    except TimeoutError:
        OUTCOMES[kind, "hang"] += 1
        raise
    except SystemExit as exc:  # argparse
        code = exc.code
    except Exception as exc:  # noqa: BLE001 - a traceback the user would see
        OUTCOMES[kind, "traceback"] += 1
        raise AssertionError(f"{kind}: traceback {type(exc).__name__}: {exc} for {argv}") from exc
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code in (0, 2), (kind, code, argv)
    assert {p: _digest(p) for p in inputs} == before, f"{kind}: an input changed"
    new = {p.name for p in folder.iterdir()} - existing
    if code == 2:
        assert len(err) == 1, (kind, err)
        assert new == set(), f"{kind}: files left after an error: {new}"
        OUTCOMES[kind, "refused"] += 1
    else:
        assert not any(n.startswith(".") for n in new), f"{kind}: temp files left: {new}"
        if argv[0] == "quantize":
            onnx.checker.check_model(onnx.load(str(out)), full_check=True)
            out.unlink()
        OUTCOMES[kind, "ok"] += 1


def _flip(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    if rng.random() < 0.3:
        b = b[: rng.randrange(len(b))]
    return bytes(b)


def _field_mutation(rng: random.Random) -> bytes:
    m = onnx.load_from_string(MODEL)
    what = rng.choice(["opset", "ir", "dims", "dtype", "attr", "input", "ext", "nan", "name"])
    if what == "opset":
        m.opset_import[0].version = rng.choice([0, -3, 1, 7, 99, 10**6])
    elif what == "ir":
        m.ir_version = rng.choice([0, 1, 99, -1])
    elif what == "dims":
        m.graph.initializer[rng.randrange(4)].dims[0] = rng.choice([0, 1, 3, 1000, -1])
    elif what == "dtype":
        m.graph.initializer[rng.randrange(4)].data_type = rng.choice([0, 2, 7, 9, 99])
    elif what == "attr":
        m.graph.node[0].attribute[0].ints[:] = [rng.choice([0, -1, 9, 3])] * rng.choice([1, 2, 3])
    elif what == "input":
        m.graph.node[rng.randrange(4)].input[0] = rng.choice(["", "nothing", "Y"])
    elif what == "ext":
        t = m.graph.initializer[0]
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", rng.choice(["w.bin", "../w.bin", "/etc/passwd", "w\x00"])),
                     ("offset", rng.choice(["0", "-5", "abc", "9" * 30])), ("length", rng.choice(["144", "x", ""]))):
            t.external_data.add(key=k, value=v)
        t.ClearField("raw_data")
    elif what == "nan":
        t = m.graph.initializer[rng.choice([0, 3])]
        a = numpy_helper.to_array(t).copy()
        a.flat[rng.randrange(a.size)] = rng.choice([np.nan, np.inf, -np.inf])
        t.CopyFrom(numpy_helper.from_array(a, t.name))
    else:
        m.graph.node[rng.randrange(4)].output[0] = rng.choice(["", "X", "C"])
    return m.SerializeToString()


def _npz_mutation(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return _flip(NPZ, rng)
    shape = rng.choice([(6, 1, 6, 6), (1, 6, 6), (6, 1, 5, 6), (0, 1, 6, 6), (6, 2, 6, 6)])
    dtype = rng.choice([np.float32, np.float64, np.int64, np.float16, np.bool_])
    x = np.random.default_rng(rng.randrange(1000)).standard_normal(shape).astype(dtype)
    if rng.random() < 0.3 and x.size and x.dtype.kind == "f":
        x.flat[0] = rng.choice([np.nan, np.inf])
    return _npz(x)


def _json_mutation(doc: dict, rng: random.Random) -> str:
    doc = json.loads(json.dumps(doc))
    paths = []

    def walk(v, p):
        paths.append(p)
        if isinstance(v, dict):
            for k, c in v.items():
                walk(c, (*p, k))
        elif isinstance(v, list):
            for i, c in enumerate(v[:4]):
                walk(c, (*p, i))
    walk(doc, ())
    for _ in range(rng.randint(1, 3)):
        p = rng.choice(paths[1:])
        parent = doc
        try:
            for k in p[:-1]:
                parent = parent[k]
            value = rng.choice([None, -1, 0, 1.5, float("nan"), "x", [], {}, 10**30, True, "../../etc/passwd"])
            if rng.random() < 0.2:
                del parent[p[-1]]
            else:
                parent[p[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    text = json.dumps(doc)
    r = rng.random()
    if r < 0.1:
        text = text[: rng.randrange(len(text))]
    elif r < 0.15:
        text = text[:-1] + ', "results": ' + "[" * 5000 + "]" * 5000 + "}"
    elif r < 0.2:
        text = text[:-1] + ', "samples": 1' + "0" * 5000 + "}"
    return text


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clifuzz")
    (folder / "model.onnx").write_bytes(MODEL)
    (folder / "calib.npz").write_bytes(NPZ)
    (folder / "w.bin").write_bytes(np.zeros(36, np.float32).tobytes())
    assert main(["quantize", str(folder / "model.onnx"), "--data", str(folder / "calib.npz"), "-o",
                 str(folder / "ref.onnx"), "--save-project", str(folder / "job.wbproj")]) == 0
    return folder


@pytest.mark.parametrize("kind", list(CASES))
def test_cli_fuzz(base, tmp_path, capsys, kind):
    rng = random.Random(f"{kind}-16")
    project_doc = json.loads((base / "job.wbproj").read_text())
    for i in range(CASES[kind]):
        folder = tmp_path / f"c{i}"
        folder.mkdir()
        model, data = folder / "model.onnx", folder / "calib.npz"
        data.write_bytes(NPZ)
        (folder / "w.bin").write_bytes((base / "w.bin").read_bytes())
        out = str(folder / "out.onnx")
        if kind == "onnx-bytes":
            model.write_bytes(_flip(MODEL, rng))
        elif kind == "onnx-fields":
            model.write_bytes(_field_mutation(rng))
        else:
            model.write_bytes(MODEL)
        if kind == "npz":
            data.write_bytes(_npz_mutation(rng))
        inputs = [model, data, folder / "w.bin"]
        if kind == "project":
            proj = folder / "job.wbproj"
            doc = dict(project_doc, model=dict(project_doc["model"], path="model.onnx"),
                       data=dict(project_doc["data"], path="calib.npz"))
            proj.write_text(_json_mutation(doc, rng))
            inputs.append(proj)
            argv = ["quantize", str(proj), "-o", out]
        else:
            preset = rng.choice(["cpu-u8s8", "dynamic-u8", "s8s8"])
            argv = ["quantize", str(model), "--preset", preset, "--data", str(data), "--samples", "4", "-o", out]
            if rng.random() < 0.2:
                argv = ["inspect", str(model)]
        _run_case(folder, argv, inputs, kind, capsys)
    done = {o: n for (k, o), n in OUTCOMES.items() if k == kind}
    print(f"\n{kind}: {CASES[kind]} cases: {done}")
    assert sum(done.values()) == CASES[kind]
    assert not done.get("traceback") and not done.get("hang")
