"""workbench.extras: the first missing module of the app's extras, and the app's one line naming it (the words
``workbench-cli render`` shares; tests/test_cli_render_without_extras.py checks its line)."""

from __future__ import annotations

import sys
import types

from workbench.extras import APP_MODULES, RENDER_MODULES, first_missing
from workbench.qt.main import no_app_message


def test_first_missing_is_the_first_in_order_and_none_when_all_import():
    assert first_missing(("json", "workbench_no_such_module_a", "workbench_no_such_module_b")) == \
        "workbench_no_such_module_a"
    assert first_missing(("json", "os.path")) is None
    assert first_missing(APP_MODULES) is None and first_missing(RENDER_MODULES) is None  # this env has the extras
    assert set(RENDER_MODULES) < set(APP_MODULES)


def test_a_broken_install_counts_as_missing(monkeypatch):
    broken = types.ModuleType("workbench_broken_module")
    broken.__spec__ = None  # find_spec raises ValueError for it
    monkeypatch.setitem(sys.modules, "workbench_broken_module", broken)
    assert first_missing(("json", "workbench_broken_module")) == "workbench_broken_module"


def test_the_app_line_is_unchanged():
    assert no_app_message("PySide6") == (
        "error: the app needs its extras, not installed here (no module named 'PySide6'): install them with "
        "pip install -e '.[app]' in the checkout (or pip install 'onnx-quant-workbench[app]'); the CLI "
        "(workbench-cli) needs none of them")
