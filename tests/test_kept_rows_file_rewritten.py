"""Rows KeptRows keeps are the rows it read: a data file saved again in place (numpy.save / numpy.savez open
the same file and rewrite it) while a recipe choice runs must not change them. Mapped .npy rows and stored
.npz members are views of the file's pages, which such a rewrite changes under them."""

from __future__ import annotations

import numpy as np
import pytest
from shared_paths import CORPUS

from workbench.core import api
from workbench.core.data.arrays import ArrayFileSource
from workbench.core.data.kept import KeptRows
from workbench.core.data.npy_rows import RowReader

CNN = CORPUS / "digits_cnn"


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
def test_kept_rows_keep_their_values_when_the_file_is_saved_again(tmp_path, suffix, corpus):
    model = api.open_model(CNN / "model_opset17.onnx")
    x = next(iter(np.load(CNN / "calib.npz").values()))[:24]
    first, second = x[:12], x[12:24]
    assert not np.array_equal(first, second)
    path = tmp_path / f"calib{suffix}"
    name, pad = model.inputs[0].name, 0

    def save(rows):
        if suffix == ".npy":
            np.save(path, rows)
        else:  # a label array of ``pad`` bytes first, so that the input's rows lie aligned (mapped, not copied)
            np.savez(path, gt_pad=np.zeros(pad, np.uint8), **{name: rows})

    save(first)
    while _copied(path, name if suffix == ".npz" else None) and pad < 16:
        pad += 1
        save(first)
    kept = KeptRows(ArrayFileSource(model, path))
    assert len(list(kept.samples())) == 12 and kept.kept == 12
    save(second)  # the same shape and dtype, other values, written into the same file
    again = np.concatenate([feed[name] for feed in kept.samples()])
    np.testing.assert_array_equal(again, first)


def _copied(path, member) -> bool:
    """Whether the rows of ``path`` (its array ``member`` for an .npz) are read as copies (not aligned)."""
    with RowReader(path, member) as reader:
        return reader.take(1).flags.owndata
