"""examples/metrics/ppocr_rec_exact.py finds its charset as the tests and benchmarks find the corpus
($WORKBENCH_SHARED, default ../shared), or $PPOCR_CHARSET; a clone without it failed with a bare
FileNotFoundError of a path three folders up and no word of which variable to set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.core import api
from workbench.core.errors import DataError

METRIC = Path(__file__).resolve().parent.parent / "examples/metrics/ppocr_rec_exact.py"


def _one_hot(indices: list[list[int]], classes: int) -> np.ndarray:
    """[N, T, C] float32 probabilities with 1.0 at each step's index."""
    return np.eye(classes, dtype=np.float32)[np.array(indices)]


def _shared_with_charset(root: Path, lines: list[str]) -> Path:
    folder = root / "corpus/models/ppocrv4_rec"
    folder.mkdir(parents=True)
    (folder / "charset.txt").write_text("\n".join(lines), encoding="utf-8")
    return root


def test_charset_from_workbench_shared(tmp_path, monkeypatch):
    monkeypatch.delenv("PPOCR_CHARSET", raising=False)
    monkeypatch.setenv("WORKBENCH_SHARED", str(_shared_with_charset(tmp_path / "s", ["blank", "a", "b", " "])))
    fn = api.load_metric(str(METRIC), allow_code=True)
    # rows decode to "ab", "b" (repeat collapsed; blank 0 dropped), "a" (trailing space stripped)
    probs = _one_hot([[1, 1, 2, 0], [0, 2, 2, 0], [1, 3, 0, 0]], 4)
    assert fn({"y": probs}, {"gt_text": np.array(["ab", "b", "a"])}) == 1.0
    assert fn({"y": probs}, {"gt_text": np.array(["ab", "bb", "b"])}) == pytest.approx(1 / 3)


def test_ppocr_charset_wins_over_workbench_shared(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SHARED", str(_shared_with_charset(tmp_path / "s", ["blank", "a", "b"])))
    own = tmp_path / "own.txt"
    own.write_text("blank\nx\ny", encoding="utf-8")
    monkeypatch.setenv("PPOCR_CHARSET", str(own))
    fn = api.load_metric(str(METRIC), allow_code=True)
    assert fn({"y": _one_hot([[1, 2]], 3)}, {"gt_text": np.array(["xy"])}) == 1.0


def test_missing_charset_names_the_path_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("PPOCR_CHARSET", raising=False)
    monkeypatch.setenv("WORKBENCH_SHARED", str(tmp_path / "no-shared"))
    with pytest.raises(DataError) as info:
        api.load_metric(str(METRIC), allow_code=True)
    expected = tmp_path / "no-shared/corpus/models/ppocrv4_rec/charset.txt"
    assert f"ppocrv4_rec charset not found at {expected}: set WORKBENCH_SHARED" in info.value.message
