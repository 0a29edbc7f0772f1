"""``analyze``'s local SQNR column: the noise a unit adds itself, from the noise-to-signal ratios of its
output and of the unit upstream, followed through MaxPool / Flatten (digits_cnn, real data)."""

from __future__ import annotations

import json
import math

from workbench.cli import main


def _local(out_db: float, in_db: float) -> float:
    inv = 10 ** (-out_db / 10) - 10 ** (-in_db / 10)
    return math.inf if inv <= 0 else -10 * math.log10(inv)


def test_local_column_follows_the_chain_through_maxpool_and_flatten(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    out = tmp_path / "rows.json"
    assert main(["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"),
                 "--no-auto", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "SQNR dB local dB" in text and "local: the noise the unit adds itself" in text
    rows = {r["node"]: r for r in json.loads(out.read_text())}
    sqnr = {n: r["sqnr_db"] for n, r in rows.items()}
    got = {n: (math.inf if r["local_sqnr_db"] == "inf" else r["local_sqnr_db"]) for n, r in rows.items()}
    # Conv -> Relu -> Conv -> Relu -> MaxPool -> Conv -> Relu -> AveragePool -> Flatten -> Gemm
    upstream = {"/f/f.3/Conv": "/f/f.0/Conv", "/f/f.7/Conv": "/f/f.3/Conv",  # through the MaxPool
                "/f/f.9/AveragePool": "/f/f.7/Conv", "/head/head.2/Gemm": "/f/f.9/AveragePool"}  # and Flatten
    assert got["/f/f.0/Conv"] == sqnr["/f/f.0/Conv"]  # reads the graph input: all its noise is its own
    for node, up in upstream.items():
        want = _local(sqnr[node], sqnr[up])
        assert got[node] == want or math.isclose(got[node], want, rel_tol=1e-12), node
    assert math.isfinite(got["/f/f.3/Conv"]) and got["/f/f.3/Conv"] > sqnr["/f/f.3/Conv"]
