"""CLI messages from a fresh-user run: an empty table says why."""

from __future__ import annotations

import io

from workbench.cli import TerminalProgress, main


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
