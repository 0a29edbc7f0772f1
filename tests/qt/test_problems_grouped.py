"""The Problems dock groups issues of one code into one expandable row with their count, and counts notes
apart from warnings and errors: int16 activations on every Conv of ppocrv4_rec added 68 near-identical rows
"tensor X uses the activation spec of Y", and the summary said "77 problems, 0 errors" of rows that were all
notes."""

from __future__ import annotations

import re
from collections import Counter

from PySide6.QtCore import Qt

from workbench.core.issues import IssueCode, Severity

SHARED = "tensor uses its producer's activation spec"


def test_int16_on_every_conv_of_ppocrv4_rec_is_one_group_row(qtbot, window, open_file, corpus):
    win, panel = window, window.problems
    open_file(win, corpus / "ppocrv4_rec" / "model.onnx")
    win.search.setText("Conv")
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    assert len(win.inspector.nodes) > 1
    win.inspector.roles["activation"].dtype.setCurrentText("int16")

    issues = [i for _s, i in panel.problems]
    by_code = Counter(i.code for i in issues)
    shared = by_code[IssueCode.SPEC_SHARED]
    assert shared > 1 and shared == sum(i.code == IssueCode.SPEC_SHARED for i in win.doc.plan.issues)
    tops = [panel.tree.topLevelItem(k) for k in range(panel.tree.topLevelItemCount())]
    groups = [t for t in tops if t.text(2) == f"{shared} \u00d7 {SHARED}"]
    assert len(groups) == 1
    group = groups[0]
    assert group.childCount() == shared and group.text(0) == "note" and group.text(1) == ""
    assert len(tops) == len(by_code)  # one row per code here
    children = [group.child(k) for k in range(shared)]
    assert all("uses the activation spec of" in c.text(2) and c.text(1) for c in children)

    # severities ordered errors > warnings > notes; notes counted apart
    order = {"error": 0, "warning": 1, "note": 2}
    ranks = [order[t.text(0)] for t in tops]
    assert ranks == sorted(ranks)
    n = Counter(str(i.severity) for i in issues)
    assert panel.summary.text().startswith(f"{n['error']} error{'' if n['error'] == 1 else 's'}, "
                                           f"{n['warning']} warning{'' if n['warning'] == 1 else 's'}, "
                                           f"{n['info']} note{'' if n['info'] == 1 else 's'}. ")
    assert "problem" not in panel.summary.text()
    # the status bar link counts them as the dock does: all notes, none a problem (it said "77 problems")
    assert (n["error"], n["warning"], n["info"]) == (0, 0, 77)
    assert re.sub("<[^>]*>", "", win.problems_link.text()) == "77 notes"

    # a click on the group opens it; a click on a child selects its node
    win.show_problems()
    panel.tree.itemClicked.emit(group, 2)
    assert group.isExpanded()
    child = children[3]
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=300_000):
        panel.tree.itemClicked.emit(child, 2)
    assert win.canvas.selected_nodes() == [child.text(1)]
    row = panel.row_of(child.text(2))
    assert panel.item_of(row) is child and panel.problems[row][1].severity == Severity.INFO
