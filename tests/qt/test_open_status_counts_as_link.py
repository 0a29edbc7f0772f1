"""The status line after an open counts the same issues as the status bar's Problems link.

It counted the preparation notes alone ("1 preparation note") while the link beside it counted every current
note and warning ("11 warnings, 4 notes" for silero_vad_16k_op15, "3 notes" for the already-quantized ddddocr
model, whose Problems dock adds that recipe advice is left out)."""

from __future__ import annotations

import re

import pytest

from workbench.core.issues import Severity


def _link_words(label) -> str:
    return re.sub(r"<[^>]*>", "", label.text())


def _listed(window) -> dict:
    """Issues of each severity in the Problems dock's rows."""
    issues = [issue for _source, issue in window.problems.problems]
    return {sev: sum(1 for i in issues if i.severity == sev) for sev in (Severity.WARNING, Severity.INFO)}


@pytest.mark.parametrize("name, warnings, notes", [
    ("silero_vad/silero_vad_16k_op15.onnx", 11, 4),
    ("ddddocr_common_old_int8/model.onnx", 0, 3),
    ("minilm_l6_v2/model.onnx", 6, 4),
])
def test_status_line_counts_what_the_problems_link_counts(window, open_file, corpus, name, warnings, notes):
    open_file(window, corpus / name)
    assert _listed(window) == {Severity.WARNING: warnings, Severity.INFO: notes}
    words = ", ".join(part for part in (f"{warnings} warnings" if warnings else "", f"{notes} notes") if part)
    assert _link_words(window.problems_link) == words
    status = window.status_label.text()
    assert f"({words}, see Problems)." in status, status
    assert "preparation note" not in status


def test_status_line_without_issues_names_none(window, open_file, corpus):
    open_file(window, corpus / "digits_cnn" / "model_opset17.onnx")
    assert window.problems.problems == [] and _link_words(window.problems_link) == ""
    assert window.status_label.text() == "Opened model_opset17.onnx: 10 nodes."
