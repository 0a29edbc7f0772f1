"""CLI messages from a fresh-user run: an empty table says why."""

from __future__ import annotations

from workbench.cli import main


def test_analyze_of_a_model_whose_units_all_sit_in_subgraphs_says_why_the_table_is_empty(corpus, tmp_path, capsys):
    folder = corpus / "silero_vad"
    rc = main(["analyze", str(folder / "silero_vad.onnx"), "--data", str(folder / "calib.npz"), "--samples", "8",
               "--eval-samples", "4"])
    out = capsys.readouterr()
    assert rc == 0
    assert "no unit of the main graph to measure" in out.err
    lines = out.out.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["node", "op"])
    assert lines[header + 1:] == []  # the per-unit table has its header only (end-to-end lines come before it)
