"""The Problems dock lists its issues in a tree only when there are some."""

from __future__ import annotations


def test_no_empty_problems_table(qtbot, window, open_file, corpus, monkeypatch):
    """The Problems dock shows its table only with rows: digits_cnn under the preset has none (the summary
    says so, no empty header under it); one issue brings the table with its row."""
    from workbench.core.issues import IssueCode, PlanIssue, Severity
    from workbench.qt import problems_panel

    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    panel = win.problems
    panel.refresh()
    assert panel.problems == [] and not panel.tree.isVisibleTo(panel)
    assert panel.summary.text() == "No problems: no preparation notes, plan issues or writer notes."
    issue = PlanIssue("/f/f.0/Conv", Severity.WARNING, "a note", list(IssueCode)[0])
    monkeypatch.setattr(problems_panel, "collect_problems", lambda doc: [("plan", issue)])
    panel.refresh()
    assert panel.tree.isVisibleTo(panel) and panel.tree.topLevelItemCount() == 1
