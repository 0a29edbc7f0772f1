"""A checkout without ../shared skips the tests that need the corpus or the cases, as the README says, instead of
erroring (a module fixture reading ``CORPUS / ... / calib.npz``) or waiting out ``open_file``'s 300 s for a model
that is not there. The tests below read the folders through ``shared_paths`` or ``diff_app``: run with
``WORKBENCH_SHARED`` naming an absent folder, each one skips, saying which folder it looked for."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: Tests that read the corpus or the cases through module constants (every test of a file, or the one named).
NEEDS_SHARED = [
    "qt/test_bar_click_in_shown_tab.py::test_a_bar_click_selects_in_a_subgraph_tab_that_has_the_node",
    "qt/test_diff_list_narrow.py::test_sqnr_column_shows_and_names_stay_apart",
    "qt/test_diff_list_readable_small_window.py::test_names_whole_in_a_small_window",
    "qt/test_diff_panes_scroll_range.py",
    "qt/test_diff_selects_errors_unit.py::test_the_errors_dock_follows_the_diff_tabs_selection",
    "qt/test_diff_small_window.py::test_docks_give_way_when_the_window_shrinks",
    "qt/test_diff_tab_opens_readable.py",
    "qt/test_diff_tab_room.py",
    "qt/test_errors_follow_every_tab.py::test_a_subgraph_tab_shows_its_own_units",
    "qt/test_errors_follow_shown_tab.py::test_a_folded_node_on_the_graph_outlines_its_unit",
    "qt/test_errors_follow_shown_tab.py::test_switching_tabs_shows_the_shown_tabs_selection",
    "qt/test_inspector_follows_shown_tab.py",
    "test_kept_rows.py",
    "test_kept_rows_file_rewritten.py",
    "test_resolve_node_memo.py",
]

#: Names that lead to ../shared: shared_paths' folders and diff_app's ppocrv4_rec helpers.
SHARED_NAMES = {
    "shared_paths": {"CORPUS", "CASES", "SHARED"},
    "diff_app": {"PPOCR", "ppocr_qdq", "calibrated_diff"},
}


def test_tests_needing_shared_skip_without_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_REQUIRE_CORPUS"}
    env.update(WORKBENCH_SHARED=str(tmp_path / "absent"), QT_QPA_PLATFORM="offscreen")
    ids = [str(TESTS / t) for t in NEEDS_SHARED]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *ids],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    summary = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " skipped" in summary and not any(w in summary for w in ("passed", "failed", "error")), summary
    skips = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all(
        "not found at " + str(tmp_path / "absent") in line or "PySide6" in line for line in skips
    ), "\n".join(skips)


def _uses_shared(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in SHARED_NAMES:
            if {a.name for a in node.names} & SHARED_NAMES[node.module]:
                return True
        if isinstance(node, ast.Import) and any(a.name == "shared_paths" for a in node.names):
            return True
    return False


def _takes_shared_fixture(tree: ast.Module) -> bool:
    """A function taking ``corpus`` / ``cases``, or a ``skipif`` (on the folder's absence)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and {a.arg for a in node.args.args} & {"corpus", "cases"}:
            return True
        if isinstance(node, ast.Attribute) and node.attr == "skipif":
            return True
    return False


def test_every_test_module_reading_shared_takes_its_fixture():
    """A new test module that reads ../shared through those names takes the ``corpus`` or ``cases`` fixture
    somewhere or skips on the folder's absence (and is listed above when it reads the folder outside a test
    that takes it)."""
    missing = []
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _uses_shared(tree) and not _takes_shared_fixture(tree):
            missing.append(str(path.relative_to(TESTS)))
    assert missing == []
