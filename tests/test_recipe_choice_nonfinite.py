"""The recipe choice reads calibration data with NaN / Inf inputs as the same data without those rows.

One NaN in a row moved the choice further than leaving that row out does: a held-out row with NaN was only
left out of the score, so the rows held out and calibrated on were not those of the data without it (the
last finite calibration row stayed in the calibration instead of being held out), and a calibration row with
NaN still gave its finite values, and its histogram lattice (set by sample 0), to the ranges scored.
ppocr_mobile_v2_cls with one NaN pixel in row 0 chose compute+mse with 7 units kept float where its data
without row 0 chooses compute+mse with 14 (the clean data: mse).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.calibration.calibrate import calibrate_split
from workbench.core.data.kept import KeptRows
from workbench.core.data.loader import open_data_source
from workbench.core.tuning import recipe_choice
from workbench.core.tuning.recipe_choice import MIN_ROWS, choose_recipe

FEAT, ROWS = 16, 8


def _chain(path):
    """x [N, 16] -> 4 x (MatMul -> Add c -> Relu) -> y: 4 compute units with element-wise ops between them."""
    rng = np.random.default_rng(4)
    weights = [(rng.standard_normal((FEAT, FEAT)) / np.sqrt(FEAT)).astype(np.float32) for _ in range(4)]
    nodes, inits, x = [], [], "x"
    for i, w in enumerate(weights):
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"mm{i}"),
            helper.make_node("Add", [f"m{i}", f"c{i}"], [f"a{i}"], name=f"add{i}"),
            helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}"),
        ]
        inits += [
            numpy_helper.from_array(w, f"w{i}"),
            numpy_helper.from_array(np.float32(rng.uniform(-1, 3)), f"c{i}"),
        ]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", FEAT])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    rng = np.random.default_rng(1004)
    rows = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    # one wide row: the choice depends on which side of the split it is
    rows[5] *= np.float32(rng.uniform(2, 8))
    return rows


def _choice(model, tmp_path, name, x):
    np.savez(tmp_path / f"{name}.npz", x=x)
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), tmp_path / f"{name}.npz")
    return rep, (rep.label, rep.promotion.units if rep.promotion else None)


@pytest.mark.parametrize("row", [7, 0], ids=["held-out row", "first calibration row"])
def test_one_nan_changes_the_choice_as_leaving_its_row_out_does(tmp_path, row):
    x = _chain(tmp_path / "m.onnx")
    model = api.open_model(tmp_path / "m.onnx")
    bad = x.copy()
    bad[row, 3] = np.nan
    rep, got = _choice(model, tmp_path, "nan", bad)
    ref, want = _choice(model, tmp_path, "without", np.delete(x, row, axis=0))
    clean, _ = _choice(model, tmp_path, "clean", x)
    # before: row 7 chose 'compute+mse + 1 unit kept float' (mm0) where the data without it chooses 'preset';
    # row 0 the same where the data without it chooses 'mse'
    assert got == want == ({7: ("preset", []), 0: ("mse", [])}[row])
    assert rep.scores == ref.scores and rep.held_out == ref.held_out == 2  # the same rows held out and scored
    assert clean.held_out == 2 and clean.scores != rep.scores  # the row does count when it is finite
    assert rep.left_out == [("x", row, 1)] and ref.left_out == []
    # the ranges handed on to the quantize are those of the rows without it (the first sample sets no lattice)
    assert rep.calibration.observers.keys() == ref.calibration.observers.keys()
    for t, obs in ref.calibration.observers.items():
        assert all(
            np.array_equal(a, b)
            for a, b in zip(rep.calibration.observers[t].compute_range(), obs.compute_range(), strict=True)
        ), t


def test_cli_names_the_row_left_out_and_writes_the_model_of_the_data_without_it(tmp_path, capsys):
    x = _chain(tmp_path / "m.onnx")
    bad = x.copy()
    bad[0, 3] = np.nan
    np.savez(tmp_path / "nan.npz", x=bad)
    np.savez(tmp_path / "without.npz", x=x[1:])
    args = ["--no-latency-check"]
    assert (
        main(
            [
                "quantize",
                str(tmp_path / "m.onnx"),
                "--data",
                str(tmp_path / "nan.npz"),
                "-o",
                str(tmp_path / "nan.onnx"),
                *args,
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert (
        "warning: Calibration: input 'x' of the calibration data holds NaN/Inf: sample 0 (1). Check the "
        "calibration data."
    ) in err.splitlines()
    line = next(s for s in err.splitlines() if s.startswith("recipe choice:"))
    assert line.startswith("recipe choice: mse (output SQNR on 2 held-out rows, dB: ")
    assert (
        "; 1 calibration row with NaN/Inf inputs left out of the choice and its ranges (sample 0); units kept "
        "float: "
    ) in line
    assert (
        main(
            [
                "quantize",
                str(tmp_path / "m.onnx"),
                "--data",
                str(tmp_path / "without.npz"),
                "-o",
                str(tmp_path / "without.onnx"),
                *args,
            ]
        )
        == 0
    )
    assert "left out" not in next(
        s for s in capsys.readouterr().err.splitlines() if s.startswith("recipe choice:")
    )
    assert (tmp_path / "nan.onnx").read_bytes() == (tmp_path / "without.onnx").read_bytes()


def test_too_few_finite_rows_skip_the_choice_naming_them(tmp_path):
    x = _chain(tmp_path / "m.onnx")[:MIN_ROWS]
    x[2, 0], x[4, 1] = np.nan, np.inf
    rep, _ = _choice(api.open_model(tmp_path / "m.onnx"), tmp_path, "few", x)
    assert rep.skipped == "fewer than 6 calibration rows with finite inputs (NaN/Inf in samples 2, 4)"
    assert rep.summary() == f"recipe choice skipped: {rep.skipped}"


def test_the_rows_are_read_once_before_the_calibration_pass(tmp_path, monkeypatch):
    """The rows with NaN / Inf are found in the read that also takes the rows held out: with data too large to
    keep in memory (``KeptRows`` keeping nothing here), every read decodes the data again."""
    x = _chain(tmp_path / "m.onnx")
    x[6, 2] = np.nan  # among the last rows: those held out are rows 5 and 7 of the data given
    np.savez(tmp_path / "nan.npz", x=x)
    decoded: list[int] = []

    def opened(data, model):
        source = open_data_source(data, model)
        rows = source._iter_samples

        def counted():
            for feed in rows():
                decoded.append(1)
                yield feed

        source._iter_samples = counted
        return source

    at_pass: list[int] = []

    def split(*args, **kwargs):
        at_pass.append(len(decoded))
        return calibrate_split(*args, **kwargs)

    monkeypatch.setattr(recipe_choice, "open_data_source", opened)
    monkeypatch.setattr(recipe_choice, "KeptRows", lambda source: KeptRows(source, max_bytes=0))
    monkeypatch.setattr(recipe_choice, "calibrate_split", split)
    rep = choose_recipe(
        api.open_model(tmp_path / "m.onnx"), api.make_recipe("cpu-u8s8"), tmp_path / "nan.npz"
    )
    assert at_pass == [
        ROWS
    ]  # was 16: the 8 rows scanned for NaN / Inf, then read again for the held-out ones
    assert rep.left_out == [("x", 6, 1)] and rep.held_out == 2
    ref, _ = _choice(api.open_model(tmp_path / "m.onnx"), tmp_path, "without", np.delete(x, 6, axis=0))
    assert rep.scores == ref.scores and (rep.label, rep.promotion.units) == (ref.label, ref.promotion.units)
