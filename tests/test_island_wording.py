"""The latency fallback's island notes say what an island is, in the CLI as in the app's Problems dock.

They said "kept float with its island of 2 node units (else_mm, then_mm)" and nowhere what an island is.
"""

from __future__ import annotations

from workbench.core.issues import IssueCode, Severity
from workbench.core.pipeline.latency_fallback import _kept_issue, _small_island_note
from workbench.core.wording import ISLAND_MEANS, island_of


def test_island_of_says_what_an_island_is():
    assert island_of(["else_mm", "then_mm"]) == (
        "island of 2 node units (else_mm, then_mm): a connected group of quantized node units between float nodes")
    assert island_of(["mm1"]) == "island of 1 node unit (mm1): a quantized node unit between float nodes"
    assert island_of(["a", "b", "c", "d", "e"]) == (
        "island of 5 node units (a, b, c and 2 more): a connected group of quantized node units between float nodes")
    assert ISLAND_MEANS in island_of(["a", "b"])


def test_both_island_notes_define_it():
    warning = _kept_issue(["a", "b", "c", "d"], 1.4, 1.1, 2)
    note = _small_island_note(["a", "b"], 1.3)
    assert (warning.severity, note.severity) == (Severity.WARNING, Severity.INFO)
    assert {warning.code, note.code} == {IssueCode.LATENCY_KEPT_FLOAT}
    assert warning.message == (
        "kept float with its island of 4 node units (a, b, c and 1 more): a connected group of quantized node units "
        "between float nodes; as quantized the model measured 1.40x its float latency, with 2 islands left float "
        "1.10x (onnxruntime CPU, 1 thread); name a node in an override, or pass --no-latency-check, to quantize it "
        "anyway")
    assert note.message == (
        "kept float with its island of 2 node units (a, b): a connected group of quantized node units between float "
        "nodes; quantization does not pay at this size (the warning about the whole model); name a node in an "
        "override, or pass --no-latency-check, to quantize it anyway")
    assert warning.units == ("a", "b", "c", "d") and note.units == ("a", "b")
