"""analyze says what it wrote after its results (it printed "wrote X.json" first, above the table, when
stdout and stderr share a terminal), as sweep does."""

from __future__ import annotations

import contextlib
import io
import json

from bundled_example import EXAMPLE

from workbench.cli import main


def test_wrote_lines_come_last(tmp_path):
    out = tmp_path / "errors.json"
    both = io.StringIO()  # one stream for stdout and stderr, as a terminal shows them
    with contextlib.redirect_stdout(both), contextlib.redirect_stderr(both):
        assert main(["analyze", str(EXAMPLE / "digits_cnn.onnx"), "--data", str(EXAMPLE / "digits_cnn_calib.npz"),
                     "--samples", "16", "--eval-samples", "8", "--no-latency-check", "--json", str(out),
                     "--node-data", str(tmp_path / "me.json")]) == 0
    lines = [ln for ln in both.getvalue().splitlines() if ln.strip()]
    rows = json.loads(out.read_text())
    head = next(i for i, ln in enumerate(lines) if ln.split()[:3] == ["node", "op", "SQNR"])
    first = lines[head + 1].split()
    worst = min(rows, key=lambda r: r["sqnr_db"])
    assert first[0] == worst["node"] and float(first[2]) == round(worst["sqnr_db"], 2)  # the table is the file's
    assert lines[-3] == f"wrote {out}"
    assert lines[-2].startswith("Model Explorer node data (sqnr, ") and lines[-1].startswith("Model Explorer node data (")
    assert lines[-4].startswith("SQNR: the unit's output against float")
