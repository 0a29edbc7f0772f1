"""Built-in metrics and task-metric helpers on hand-made values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.core.analysis.metrics import (
    METRICS,
    char_error_rate,
    cosine,
    ctc_greedy_decode,
    edit_distance,
    load_metric,
    output_sqnr,
    retrieval_top1,
    roc_auc,
    top1,
)
from workbench.core.errors import DataError


def test_top1_counts_argmax_matches():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.5, 0.1, 0.9], [1.0, 0.0, -1.0]], np.float32)
    labels = np.array([0, 1, 1, 2])
    assert top1({"logits": logits}, {"gt_label": labels}) == pytest.approx(0.5)
    assert top1([logits], {"gt_label": np.array([0, 1, 2, 0])}) == 1.0


def test_top1_without_labels_says_what_to_add():
    with pytest.raises(DataError, match="gt_label"):
        top1({"y": np.zeros((2, 3))}, {})
    with pytest.raises(DataError, match="3 entries"):
        top1({"y": np.zeros((2, 3))}, {"gt_label": np.zeros(3, np.int64)})


def test_cosine_and_sqnr_against_the_reference_output():
    ref = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    out = np.array([[3.0, 4.5], [0.0, 0.0]], np.float32)
    batch = {"ref:y": ref}
    # sum(ref^2) = 25, sum(err^2) = 0.25 -> 20 dB
    assert output_sqnr({"y": out}, batch) == pytest.approx(20.0)
    expected_cos = (9 + 18) / (5.0 * math.sqrt(9 + 20.25))
    assert cosine({"y": out}, batch) == pytest.approx(expected_cos)
    assert cosine({"y": 2 * ref}, batch) == pytest.approx(1.0)
    with pytest.raises(DataError, match="ref:"):
        cosine({"y": out}, {})


def test_ctc_greedy_collapses_repeats_and_drops_blank():
    charset = ["blank", "a", "b", "c"]
    path = [1, 1, 0, 1, 2, 2, 0, 3, 3]  # -> a a b c after collapse (blank separates the two a)
    probs = np.full((len(path), 4), 0.1, np.float32)
    probs[np.arange(len(path)), path] = 0.9
    second = np.full_like(probs, 0.1)
    second[:, 0] = 0.9  # all blank -> empty string
    assert ctc_greedy_decode(np.stack([probs, second]), charset) == ["aabc", ""]
    assert ctc_greedy_decode(probs, charset) == ["aabc"]
    with pytest.raises(DataError, match="charset has 3"):
        ctc_greedy_decode(probs, charset[:3])


def test_edit_distance_and_cer():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == 3
    assert edit_distance("same", "same") == 0
    assert char_error_rate("abcd", "abd") == pytest.approx(0.25)
    assert char_error_rate("", "") == 0.0


def test_roc_auc_mann_whitney_with_ties():
    assert roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == pytest.approx(0.75)
    assert roc_auc(np.array([0, 1, 0, 1]), np.full(4, 0.3)) == pytest.approx(0.5)
    # one tie between a positive and a negative counts one half: pairs (p,n) = 4, wins 3.5
    assert roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.5, 0.5, 0.9])) == pytest.approx(0.875)
    with pytest.raises(DataError):
        roc_auc(np.ones(3), np.arange(3.0))


def test_retrieval_top1():
    q = np.eye(3)
    c = np.eye(3) + 0.1
    assert retrieval_top1(q, c) == 1.0
    assert retrieval_top1(q, c[[1, 0, 2]]) == pytest.approx(1 / 3)


def test_load_metric_builtin_and_user_file_needs_opt_in(tmp_path):
    assert load_metric("top1") is METRICS["top1"]
    with pytest.raises(DataError, match="unknown metric"):
        load_metric("accuracy5")
    f = tmp_path / "m.py"
    f.write_text("import numpy as np\n\ndef metric(outputs, batch):\n"
                 "    return float(np.mean(next(iter(outputs.values()))))\n")
    with pytest.raises(DataError, match="allow_code=True") as err:
        load_metric(str(f))
    assert "--allow-code" in str(err.value)
    fn = load_metric(f, allow_code=True)
    assert fn({"y": np.array([1.0, 2.0, 6.0])}, {}) == pytest.approx(3.0)
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    with pytest.raises(DataError, match="defines no function"):
        load_metric(bad, allow_code=True)
    with pytest.raises(DataError, match="not found"):
        load_metric(tmp_path / "missing.py", allow_code=True)


def test_top1_refuses_labels_beyond_the_class_count():
    """1-based labels of 10 classes (1 .. 10): the rows labelled 10 can never match, and top1 scored them as
    misses without a word (digits_cnn's eval data with gt_label + 100: 'metric top1: float 0.0000')."""
    logits = np.eye(10)[[0, 3, 9]]
    assert top1({"y": logits}, {"gt_label": np.array([0, 3, 9])}) == 1.0
    with pytest.raises(DataError, match=r"gt_label holds 10 at row 2, but the output of shape \[3, 10\] has 10 classes"):
        top1({"y": logits}, {"gt_label": np.array([1, 4, 10])})


def test_unknown_metric_named_like_a_builtin_one_says_which():
    """--metric accuracy (the corpus README's word for digits_cnn) was refused with the list alone; the refusal
    names the option and lists the metrics, in the lower case of the other errors ('Unknown metric 'top5'.')."""
    with pytest.raises(DataError) as got:
        load_metric("accuracy")
    assert got.value.message == ("--metric 'accuracy': unknown metric (top1 is the accuracy: the share of rows whose "
                                 "top class is their gt_label).")
    assert got.value.hint == ("Use one of top1, cosine, output_sqnr, detection_scores, or the path of a .py file "
                              "defining metric().")
    with pytest.raises(DataError, match=r"^--metric 'Cosine-Similarity': unknown metric \(cosine is the cosine "):
        load_metric("Cosine-Similarity")
    with pytest.raises(DataError) as got:
        load_metric("top5")
    assert str(got.value) == ("--metric 'top5': unknown metric. Use one of top1, cosine, output_sqnr, "
                              "detection_scores, or the path of a .py file defining metric().")
