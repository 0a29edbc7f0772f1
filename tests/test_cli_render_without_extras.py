"""``workbench-cli render`` on the README's CLI-only install (``pip install -e .`` in the checkout, no ``[app]``
extras) says in one line which module is missing and how to install the extras from the checkout. It said
"render draws with Qt, which is not installed. pip install 'onnx-quant-workbench[app]'." (an install from the
package index, not the checkout), and with Qt present but pyqtgraph missing its drawing child failed with
"render model.onnx: ModuleNotFoundError: No module named 'pyqtgraph'" and no word of the extras. The missing
modules are simulated by an import blocker that ``sitecustomize`` installs in the started Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from import_blocker import blocked_env
from onnx import TensorProto, helper


def _render(tmp_path: Path, blocked: tuple[str, ...]) -> subprocess.CompletedProcess:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "m.onnx"))
    env = blocked_env(tmp_path, blocked)
    cmd = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]
    return subprocess.run([*cmd, "render", "m.onnx", "-o", "m.png"], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)


@pytest.mark.parametrize(("blocked", "named"), [(("PySide6", "pyqtgraph"), "PySide6"), (("pyqtgraph",), "pyqtgraph")])
def test_render_without_the_app_extras_names_the_module_and_the_checkout_install(tmp_path, blocked, named):
    run = _render(tmp_path, blocked)
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert run.stderr == (f"error: render draws with the app's extras, not installed here (no module named "
                          f"'{named}'). Install them with pip install -e '.[app]' in the checkout (or pip install "
                          "'onnx-quant-workbench[app]'); the other verbs need none of them.\n")
    assert not (tmp_path / "m.png").exists()
