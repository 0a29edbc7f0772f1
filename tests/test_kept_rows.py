"""KeptRows: a data source's samples decoded once; the recipe choice reads its calibration file once."""

from __future__ import annotations

import numpy as np
import pytest
from shared_paths import CORPUS

from workbench.core import api
from workbench.core.data.arrays import ArrayFileSource
from workbench.core.data.kept import KeptRows
from workbench.core.data.loader import open_data

CNN = CORPUS / "digits_cnn"


class _Counting(ArrayFileSource):
    """An .npz source that counts the passes over its file and the rows it decodes."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.passes = self.rows = 0

    def _iter_samples(self):
        self.passes += 1
        for feed in super()._iter_samples():
            self.rows += 1
            yield feed


@pytest.fixture()
def cnn(tmp_path, corpus):
    """digits_cnn and a deflated 12-row calibration file of its rows (as numpy.savez_compressed writes them)."""
    model = api.open_model(CNN / "model_opset17.onnx")
    x = next(iter(np.load(CNN / "calib.npz").values()))[:12]
    path = tmp_path / "calib.npz"
    np.savez_compressed(path, **{model.inputs[0].name: x})
    return model, path, x


def _equal(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys()
        and all(
            x[k].dtype == y[k].dtype and x[k].shape == y[k].shape and np.array_equal(x[k], y[k]) for k in x
        )
        for x, y in zip(a, b, strict=True)
    )


def test_every_pass_yields_the_source_s_rows_and_only_the_first_reads_the_file(cnn):
    model, path, x = cnn
    plain = list(open_data(str(path), model).samples())
    source = _Counting(model, path)
    kept = KeptRows(source)
    for _ in range(3):
        assert _equal(list(kept.samples()), plain)
    assert (source.passes, source.rows, kept.kept) == (1, 12, 12)
    assert _equal(
        [dict(zip(f, (np.asarray(v) for v in f.values()), strict=True)) for f in kept.samples()], plain
    )
    assert np.array_equal(np.concatenate([f[model.inputs[0].name] for f in kept.samples()]), x)
    assert (
        kept.num_samples() == 12
        and kept.to_json() == source.to_json()
        and kept.describe() == source.describe()
    )


def test_batches_and_a_pass_stopped_early_give_the_same_rows(cnn):
    model, path, _ = cnn
    plain = open_data(str(path), model)
    source = _Counting(model, path)
    kept = KeptRows(source)
    assert _equal(list(kept.samples(5)), list(plain.samples(5)))
    assert kept.kept == 5
    assert _equal(
        [f for _, f in kept.indexed_batches(4, 11, break_at=9)],
        [f for _, f in plain.indexed_batches(4, 11, break_at=9)],
    )
    assert _equal(list(kept.samples()), list(plain.samples()))
    assert (kept.kept, source.passes) == (
        12,
        3,
    )  # the first 5 from memory, then the file from row 0 once more
    list(kept.samples())
    assert source.passes == 3


def test_kept_arrays_are_read_only(cnn):
    model, path, _ = cnn
    kept = KeptRows(open_data(str(path), model))
    feed = next(iter(kept.samples()))
    with pytest.raises(ValueError, match="read-only"):
        feed[model.inputs[0].name][...] = 0
    feed["other"] = None  # each pass gets its own dict
    assert "other" not in next(iter(kept.samples()))


def test_rows_past_the_budget_are_read_from_the_source_every_time(cnn):
    model, path, _ = cnn
    plain = list(open_data(str(path), model).samples())
    source = _Counting(model, path)
    kept = KeptRows(source, max_bytes=5 * plain[0][model.inputs[0].name].nbytes)  # 5 of the 12 rows fit
    for _ in range(2):
        assert _equal(list(kept.samples()), plain)
    assert (kept.kept, source.passes, source.rows) == (0, 2, 24)


def test_the_recipe_choice_reads_its_calibration_file_once(cnn, monkeypatch):
    model, path, _ = cnn
    made = []

    def counting(spec, m):
        made.append(_Counting(m, spec))
        return made[-1]

    monkeypatch.setattr("workbench.core.tuning.recipe_choice.open_data_source", counting)
    choice = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), str(path))
    assert choice.skipped is None and choice.held_out == 3
    # held-out rows, the calibration pass, bias correction's float run and the size probe read it 3-4 times before
    assert [(s.passes, s.rows) for s in made] == [(1, 12)]
