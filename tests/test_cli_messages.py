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


def test_analyze_says_how_many_rows_it_left_out(corpus, capsys):
    folder = corpus / "digits_cnn"
    rc = main(["analyze", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--samples", "16",
               "--eval-samples", "8", "--top", "2", "--no-auto"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    header = next(i for i, line in enumerate(out) if line.split()[:2] == ["node", "op"])
    assert len(out[header + 1:header + 3]) == 2
    assert out[header + 3] == "(2 of 5 units shown, worst first; --top N for more, --json for all)"
