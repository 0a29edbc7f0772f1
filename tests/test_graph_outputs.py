"""The one output-pairing rule shared by evaluate, compare and the diff's error tables."""

from workbench.core.graph.outputs import pair_outputs, paired_by_position, renamed_note


def test_pairs_by_name_in_reference_order_even_with_extra_outputs():
    assert pair_outputs(["b", "a"], ["a", "extra", "b"]) == [("b", "b"), ("a", "a")]
    assert not paired_by_position(["b", "a"], ["a", "extra", "b"])
    assert renamed_note(["b", "a"], ["a", "extra", "b"]) is None


def test_pairs_by_position_when_renamed_and_counts_agree():
    assert pair_outputs(["logits", "boxes"], ["out_0", "out_1"]) == [("logits", "out_0"), ("boxes", "out_1")]
    assert renamed_note(["logits"], ["y"]) == "output names differ (['logits'] vs ['y']); matched by position"


def test_no_pairing_when_names_and_counts_differ():
    assert pair_outputs(["a", "b"], ["c"]) == []
    assert not paired_by_position(["a", "b"], ["c"])
    assert renamed_note(["a", "b"], ["c"]) is None
