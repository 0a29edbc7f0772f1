"""Python code run with --allow-code that calls sys.exit (a data reader written as a script, a metric file
parsing its own arguments at import) ended the CLI with that code and no word of what happened (exit 3,
nothing on stderr). It is now one error line naming the file, exit status 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from qdq_helpers import cli_model_files

from workbench.cli import main


def _model(folder: Path) -> Path:
    return cli_model_files(folder, calib=False, eval_labels=np.arange(8))


def test_reader_exiting(tmp_path, capsys):
    model = _model(tmp_path)
    reader = tmp_path / "reader.py"
    reader.write_text("import sys\nsys.exit(3)\n")
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(model), "--data", str(reader), "--allow-code", "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {reader} called sys.exit(3) while Workbench ran it. Return or raise there instead of exiting (an "
        "argparse call at import time exits too)."]
    assert not out.exists()


def test_metric_exiting_in_the_function(tmp_path, capsys):
    model = _model(tmp_path)
    metric = tmp_path / "metric.py"
    metric.write_text("import sys\n\ndef metric(outputs, batch):\n    sys.exit('no labels')\n")
    assert main(["evaluate", str(model), str(model), "--data", str(tmp_path / "eval.npz"), "--metric", str(metric),
                 "--allow-code"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {metric} called sys.exit('no labels') while Workbench ran it. Return or raise there "
                   "instead of exiting (an argparse call at import time exits too)."]
