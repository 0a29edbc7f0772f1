"""Issue #5: ppocrv4_rec exact line match with the shipped recipe (examples/recipes/ppocrv4_rec.json):
every Conv/MatMul unit on 8-bit QDQ (counted in the written model), SmoothQuant migration, element-wise
ops float. Measured on the real 100-line eval split at two calibration sample counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.metrics import ctc_greedy_decode
from workbench.core.runtime.session import make_session

RECIPE = Path(__file__).resolve().parent.parent / "examples" / "recipes" / "ppocrv4_rec.json"


def _exact(proto, folder: Path) -> float:
    charset = (folder / "charset.txt").read_text(encoding="utf-8").split("\n")
    with np.load(folder / "eval.npz") as z:
        x, gts = z["x"], [str(t) for t in z["gt_text"]]
    sess = make_session(proto)
    probs = np.concatenate([sess.run(None, {"x": x[i:i + 25]})[0] for i in range(0, len(x), 25)])
    texts = [t.strip() for t in ctc_greedy_decode(probs, charset, blank=0)]
    return float(np.mean([p == g for p, g in zip(texts, gts, strict=True)]))


def _eight_bit_compute_inputs(proto) -> tuple[int, int]:
    """(Conv/MatMul/Gemm nodes whose inputs 0 and 1 both come from 8-bit DequantizeLinear, all of them)."""
    inits = {i.name: i.data_type for i in proto.graph.initializer}
    producer = {o: n for n in proto.graph.node for o in n.output}

    def dq8(t: str) -> bool:
        n = producer.get(t)
        if n is None or n.op_type != "DequantizeLinear":
            return False
        src = n.input[0]
        if src in inits:
            return inits[src] in (2, 3)  # UINT8, INT8
        q = producer.get(src)
        zp = q.input[2] if q is not None and len(q.input) > 2 else None
        return zp in inits and inits[zp] in (2, 3)

    nodes = [n for n in proto.graph.node if n.op_type in ("Conv", "MatMul", "Gemm")]
    return sum(dq8(n.input[0]) and dq8(n.input[1]) for n in nodes), len(nodes)


#: exact match the shipped recipe must reach per calibration draw (the first N rows). Since the Conv
#: affines are folded on load (workbench.core.model.affine) the 32-row draw measures 0.89 and the
#: 64-row draw 0.97; draws move it by about +-0.05 (100 eval lines), so 32 rows is held to 0.88.
TARGET = {32: 0.88, 64: 0.93}


@pytest.mark.slow
@pytest.mark.parametrize("samples", sorted(TARGET))
def test_ppocrv4_rec_shipped_recipe_reaches_exact_match_target(corpus, samples):
    folder = corpus / "ppocrv4_rec"
    model = api.open_model(folder / "model.onnx")
    res = api.quantize(model, api.load_recipe(RECIPE), data=folder / "calib.npz", samples=samples)
    q8, total = _eight_bit_compute_inputs(res.proto)
    assert total == 51 and q8 / total >= 0.85, (q8, total)
    assert _exact(res.proto, folder) >= TARGET[samples]


@pytest.mark.slow
def test_ppocrv4_rec_cli_default_reaches_the_exact_match_target(corpus, tmp_path, capsys):
    """No recipe: the recipe choice keeps element-wise ops float with MSE ranges (issue #14: >= 0.93 exact,
    >= 85 % of Conv/MatMul on 8 bits). Without the latency check, whose measured timings may leave
    islands float differently from one run to the next."""
    folder = corpus / "ppocrv4_rec"
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(folder / "model.onnx"), "--data", str(folder / "calib.npz"), "-o", str(out),
                 "--no-latency-check"]) == 0
    assert "recipe choice: compute+mse" in capsys.readouterr().err
    proto = onnx.load(str(out))
    q8, total = _eight_bit_compute_inputs(proto)
    assert total == 51 and q8 / total >= 0.85, (q8, total)
    assert _exact(proto, folder) >= 0.93
