"""Counts the app, the CLI and the core show agree with their number: "1 issue", "2 issues", never "1 issues" or "(s)"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from PySide6.QtCore import Qt

import workbench
from workbench.core import api
from workbench.core.wording import count, plural

PACKAGE = Path(workbench.__file__).resolve().parent


def test_count_is_singular_only_for_one():
    assert [count(n, "issue") for n in (0, 1, 2)] == ["0 issues", "1 issue", "2 issues"]
    assert count(1, "analysis", "analyses") == "1 analysis" and count(3, "analysis", "analyses") == "3 analyses"
    assert plural(1, "node matches", "nodes match") == "node matches"


def _strings(path: Path) -> list[str]:
    """Every string constant of ``path`` (f-string parts included) but the docstrings."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


def test_no_text_counts_with_s_in_brackets():
    found = [(str(p.relative_to(PACKAGE)), s) for p in sorted(PACKAGE.rglob("*.py")) for s in _strings(p)
             if re.search(r"\w\(s\)", s)]
    assert found == []


def _noun_count(text: str, noun: str) -> int:
    m = re.search(rf"(\d+) {noun}(s?)\b", text)
    assert m, f"no count of {noun!r} in {text!r}"
    n = int(m.group(1))
    assert (m.group(2) == "") == (n == 1), f"wrong number in {m.group(0)!r}"
    return n


def test_recipe_summary_and_problems_count_agree_in_number(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    assert win.problems.summary.text().startswith("No problems")
    assert win.problems_link.text() == ""
    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    win.inspector.roles["activation"].dtype.setCurrentText("int16")  # the README tutorial's step 2
    plan = api.plan(win.doc.model, win.doc.recipe)  # an independent planning of the same recipe
    text = win.recipe_panel.summary.text()
    assert _noun_count(text, "issue") == len(plan.issues) >= 1
    assert _noun_count(text, "node unit") == sum(1 for u in plan.units.values() if not u.excluded)
    assert _noun_count(text, "activation tensor") == len(plan.activations)
    assert _noun_count(text, "error") == sum(1 for i in plan.issues if i.severity == "error")
    shown = len(win.problems.problems)
    summary = win.problems.summary.text()
    assert sum(_noun_count(summary, noun) for noun in ("error", "warning", "note")) == shown
    # the status bar link: the same counts, the kinds there are (notes apart from errors and warnings)
    link = re.sub("<[^>]*>", "", win.problems_link.text())
    assert link == ", ".join(c for c in summary.split(".")[0].split(", ") if not c.startswith("0 ")), (link, summary)
    assert sum(_noun_count(link, noun) for noun in ("error", "warning", "note") if noun in link) == shown
    assert "(s)" not in win.problems_link.text() + win.status_label.text()
