"""A float model above 2 GiB (external data) quantizes with bounded memory.

The model (three MatMuls, 2.06 GiB of float32 weights) is generated block by block with numpy
straight into its ``.data`` file. A child process opens it, quantizes it with ``dynamic-u8`` and
exports it twice to one path; it reports its peak RSS (``VmHWM`` in ``/proc/self/status``: its own, not its parent's). The int8 model
(~0.5 GiB) is saved with external data by lowering the threshold in the child (the stand-in for
an int8 model above 2 GiB); the second export must not grow the ``.data`` file. The quantized
model is checked against the float one in onnxruntime on one random sample.

Memory: the float weights stay in ``big.onnx.data`` (``workbench.core.io.external``): the writer
reads one weight at a time through a memory map (released after its unit), the int8 weights are
held once in the output proto and streamed to the output ``.data`` file by ``save_model``; on
top comes the interpreter with onnxruntime (~0.35 GiB). Measured 1.06x the float size, 62 s
(load average 10); it was 2.06x and 121 s when every float weight was loaded into the ModelProto
and the instrumented / saved copies were made in memory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from onnx import TensorProto, helper

pytestmark = pytest.mark.slow

DIMS = ((16384, 16384), (16384, 16384), (16384, 1024))  # 2.06 GiB of float32
#: Bound on peak RSS / float weight bytes (the issue's target; measured 1.06, earlier code 2.06 and 4.2).
MAX_RATIO = 1.5


def _generate(folder, dims=DIMS, rows=1024) -> tuple:
    """Write ``big.onnx`` + ``big.onnx.data`` block by block (never more than ``rows`` rows in memory)."""
    data = folder / "big.onnx.data"
    rng = np.random.default_rng(0)
    inits, nodes, offset = [], [], 0
    with open(data, "wb") as f:
        for i, (r, c) in enumerate(dims):
            scale = np.float32(1.0 / np.sqrt(r))
            for start in range(0, r, rows):
                block = (rng.random((min(rows, r - start), c), dtype=np.float32) - np.float32(0.5)) * scale
                f.write(block.tobytes())
            t = TensorProto(name=f"W{i}", data_type=TensorProto.FLOAT, dims=[r, c])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", data.name), ("offset", str(offset)), ("length", str(r * c * 4))):
                t.external_data.add(key=k, value=v)
            offset += r * c * 4
            inits.append(t)
            nodes.append(helper.make_node("MatMul", ["X" if i == 0 else f"H{i - 1}", f"W{i}"], [f"H{i}"], name=f"mm{i}"))
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", dims[0][0]])],
                          [helper.make_tensor_value_info(f"H{len(dims) - 1}", TensorProto.FLOAT, ["N", dims[-1][1]])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    (folder / "big.onnx").write_bytes(m.SerializeToString())
    return folder / "big.onnx", offset


CHILD = textwrap.dedent("""
    import json, os, sys, time
    import workbench.core.io.save as save_mod
    from workbench.core import api

    src, out = sys.argv[1], sys.argv[2]
    save_mod.EXTERNAL_THRESHOLD = 256 << 20  # stands in for 2 GiB: the int8 model goes external
    t0 = time.perf_counter()
    model = api.open_model(src)
    result = api.quantize(model, api.make_recipe("dynamic-u8"))
    del model
    api.export(result, out)
    first = os.path.getsize(out + ".data")
    api.export(result, out)
    second = os.path.getsize(out + ".data")
    # VmHWM: this process's own peak. ru_maxrss would start at the parent's peak (Linux carries it over exec),
    # and the pytest process running the suite can hold several GiB by the time this test runs
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) * 1024
    print(json.dumps({"peak": peak, "data1": first, "data2": second, "seconds": time.perf_counter() - t0}))
""")


def test_quantize_a_model_above_2gib_with_bounded_memory(tmp_path):
    need = 2 * sum(r * c * 4 for r, c in DIMS)
    if shutil.disk_usage(tmp_path).free < need + (2 << 30):
        pytest.skip("not enough free disk space for the big model")
    src, float_bytes = _generate(tmp_path)
    out = tmp_path / "big.int8.onnx"
    before = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(tmp_path.iterdir())]
    proc = subprocess.run([sys.executable, "-c", CHILD, str(src), str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    ratio = r["peak"] / float_bytes
    print(f"\nfloat weights {float_bytes / 2**30:.2f} GiB, peak RSS {r['peak'] / 2**30:.2f} GiB, "
          f"ratio {ratio:.2f} (target 1.5), int8 .data {r['data1'] / 2**20:.0f} MiB, {r['seconds']:.0f} s")
    assert r["data1"] == r["data2"], "a second export to the same path grew the .data file"
    int8_weights = sum(r_ * c for r_, c in DIMS)
    assert int8_weights <= r["data1"] < int8_weights * 1.01
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.int8.onnx", "big.int8.onnx.data", "big.onnx",
                                                         "big.onnx.data"]
    assert [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(tmp_path.iterdir())
            if p.name.startswith("big.onnx")] == before  # the float model's files untouched
    assert ratio <= MAX_RATIO
    _check_outputs(src, out)


#: The output check, in a child process too: the float model's session holds its 2.06 GiB of weights and the
#: int8 one its 0.5 GiB; run in the pytest process they raised its peak RSS from 1.6 to 4.7 GiB for the rest
#: of a whole-suite run.
CHECK = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onnx
    import onnxruntime as ort

    src, out, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    q = onnx.load(out, load_external_data=False)
    ops = [n.op_type for n in q.graph.node]
    x = np.random.default_rng(1).standard_normal((1, rows)).astype(np.float32)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    yq = ort.InferenceSession(out, so, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    yf = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    cos = float(np.dot(yf.ravel(), yq.ravel()) / (np.linalg.norm(yf) * np.linalg.norm(yq)))
    print(json.dumps({"ops": ops, "cos": cos}))
""")


def _check_outputs(src, out):
    """The int8 model runs in onnxruntime and follows the float model (cosine > 0.99), run in a child
    process (:data:`CHECK`)."""
    proc = subprocess.run([sys.executable, "-c", CHECK, str(src), str(out), str(DIMS[0][0])], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["ops"].count("MatMulInteger") == len(DIMS) and r["ops"].count("DynamicQuantizeLinear") == len(DIMS)
    assert r["cos"] > 0.99, r["cos"]
