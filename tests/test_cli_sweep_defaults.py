"""``sweep`` measures 16 units end to end by default (``--top-units 0``: all), says so under the table,
and prints "wrote FILE" after the table."""

from __future__ import annotations

import io
import json
import math
import sys

from workbench.cli import SWEEP_TOP_UNITS, main


def _sweep(corpus, tmp_path, monkeypatch, *extra: str) -> tuple[list[dict], list[str]]:
    folder = corpus / "digits_transformer"
    out = tmp_path / "sweep.json"
    both = io.StringIO()  # stdout and stderr in the order they were written
    monkeypatch.setattr(sys, "stdout", both)
    monkeypatch.setattr(sys, "stderr", both)
    assert main(["sweep", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"),
                 "--executor", "inline", "--no-latency-check", "--no-auto", "--eval-samples", "2",
                 "--json", str(out), *extra]) == 0
    monkeypatch.undo()
    return json.loads(out.read_text())["rows"], both.getvalue().splitlines()


def _measured(rows: list[dict]) -> int:
    return sum(math.isfinite(float(r["only_quant_db"])) for r in rows)


def test_sweep_measures_the_default_units_end_to_end_and_writes_after_the_table(corpus, tmp_path, monkeypatch):
    assert SWEEP_TOP_UNITS == 16
    rows, lines = _sweep(corpus, tmp_path, monkeypatch)
    assert len(rows) == 36 and _measured(rows) == 16
    assert all(math.isfinite(float(r["local_db"])) for r in rows[16:])  # the rest: their own error
    footer = ("(16 of 36 units measured end to end, those with the worst own error; the others have their "
              "own-error figure only, listed after them: --top-units N for more, --top-units 0 for all)")
    assert footer in lines
    table = [i for i, line in enumerate(lines) if line.startswith("node ")]
    assert len(table) == 1
    assert lines[-1] == f"wrote {tmp_path / 'sweep.json'}" and lines.index(footer) < len(lines) - 1
    assert table[0] < lines.index(footer)


def test_top_units_zero_measures_every_unit(corpus, tmp_path, monkeypatch):
    rows, lines = _sweep(corpus, tmp_path, monkeypatch, "--top-units", "0", "--top", "0")
    assert len(rows) == 36 and _measured(rows) == 36
    assert "(all 36 units measured end to end)" in lines


def test_without_executor_the_sweep_runs_on_its_own_default(corpus, tmp_path, monkeypatch):
    """No --executor: the command hands the sweep no executor, so it runs on the sweep's default (one
    thread per core), not on make_executor's local processes; --executor names one."""
    from workbench.core import api

    real, given = api.sensitivity_sweep, []

    def recording(*args, **kwargs):
        given.append(kwargs["executor"])
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "sensitivity_sweep", recording)
    folder = corpus / "digits_transformer"
    base = ["sweep", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-latency-check",
            "--no-auto", "--eval-samples", "2", "--top-units", "2", "--top", "0"]
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(base) == 0
    assert main([*base, "--executor", "inline"]) == 0
    assert given[0] is None and type(given[1]).__name__ == "InlineExecutor"
