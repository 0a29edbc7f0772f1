"""The code's shape, as docs/architecture.md and the README's "How the code is laid out" describe it: registries that agree,
and no function-level imports of workbench modules outside a short allow-list."""

from __future__ import annotations

import ast
from pathlib import Path

from workbench.core.calibration.observers import OBSERVERS as OBSERVER_CLASSES
from workbench.core.pipeline.quantize import QUANTIZE_PASSES
from workbench.core.recipe.spec import OBSERVERS as RECIPE_OBSERVERS
from workbench.core.recipe.spec import PlanMode
from workbench.core.writers.registry import WRITERS

ROOT = Path(__file__).resolve().parent.parent / "workbench"

#: (file relative to workbench/, imported module) -> why the import waits until the function runs
ALLOWED_LATE_IMPORTS: dict[tuple[str, str], str] = {
    ("qt/main.py", "workbench.qt"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
    ("qt/main.py", "workbench.qt.app_window"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
    ("qt/main.py", "workbench.qt.dialogs"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
    ("qt/main.py", "workbench.qt.interrupt"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
    ("qt/main.py", "workbench.qt.netron_view"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
    ("qt/main.py", "workbench.qt.selftest"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
    ("qt/main.py", "workbench.qt.theme"): "the app entry point loads Qt and the window only after argv is parsed (--help, --version)",
}


def _late_imports() -> set[tuple[str, str]]:
    found = set()
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                mods = []
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    mods = [node.module]
                elif isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                for m in mods:
                    if m == "workbench" or m.startswith("workbench."):
                        found.add((str(path.relative_to(ROOT)), m))
    return found


def test_no_function_level_imports_of_workbench_modules_outside_the_allow_list():
    extra = sorted(_late_imports() - set(ALLOWED_LATE_IMPORTS))
    assert extra == [], f"import at module level, or add a reason to ALLOWED_LATE_IMPORTS: {extra}"
    assert not any(f.startswith("core/") for f, _ in _late_imports())  # never in the core
    assert set(ALLOWED_LATE_IMPORTS) <= _late_imports(), "drop allow-list entries that no longer exist"


def test_observer_names_agree_between_recipe_validation_and_the_registry():
    assert tuple(RECIPE_OBSERVERS) == tuple(OBSERVER_CLASSES)


def test_every_plan_mode_has_a_writer():
    assert set(WRITERS) == {m.value for m in PlanMode}


def test_pass_names_are_unique():
    names = [p.name for p in QUANTIZE_PASSES]
    assert len(names) == len(set(names)) == 17


def test_every_issue_made_in_the_code_names_its_code():
    """PlanIssue's ``code`` is required: a call without one would raise only when that path runs."""
    missing = []
    for path in ROOT.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "PlanIssue":
                if len(node.args) < 4 and not any(k.arg == "code" for k in node.keywords):
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert missing == []
