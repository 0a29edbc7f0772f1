"""Analysis in bounded memory: onnxruntime returns every tapped unit output of a run at once, so the
rows of a batch are split into runs whose outputs fit ``TAP_BUDGET`` (measured on a 264-unit text
recognizer, 16 rows were 2.5 GB per model). The figures do not depend on the split."""

from __future__ import annotations

import numpy as np
import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.analysis import unit_error
from workbench.core.runtime.session import add_outputs, make_session

MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))


@pytest.fixture(scope="module")
def quantized():
    model = api.open_model(MODEL)
    return model, api.quantize(model, api.make_recipe("cpu-u8s8"), data=CALIB, samples=16)


def _runs_seen(monkeypatch) -> list[int]:
    """Rows of every run of the quantized model's session, recorded from the feeds."""
    seen: list[int] = []
    real = unit_error.make_session

    def spy(proto, **kw):
        sess = real(proto, **kw)
        if kw.get("optimize") is False:
            class Spy:
                def run(self, names, feed):
                    seen.append(next(iter(feed.values())).shape[0])
                    return sess.run(names, feed)

                def get_inputs(self):
                    return sess.get_inputs()
            return Spy()
        return sess

    monkeypatch.setattr(unit_error, "make_session", spy)
    return seen


def test_figures_do_not_depend_on_rows_per_run(quantized, monkeypatch):
    model, res = quantized
    whole = api.analyze(model, res, EVAL, samples=40)  # 8-row batches, one run each
    seen = _runs_seen(monkeypatch)
    monkeypatch.setattr(unit_error, "TAP_BUDGET", 1)  # below one row: every run is a single row
    split = api.analyze(model, res, EVAL, samples=40)
    assert seen == [1] * 40  # every row alone, the first one also sizing the runs (it ran twice: 41 runs)
    assert [r.node for r in split] == [r.node for r in whole] and len(whole) > 3
    # the same up to float32 accumulation order: the Gemm writes its logits float (no output rounding
    # to hide it), and onnxruntime's Gemm sums in another order for 1 row than for 16
    for a, b in zip(whole, split, strict=True):
        assert a.sqnr_db == pytest.approx(b.sqnr_db, rel=1e-6) and a.max_abs == pytest.approx(b.max_abs, rel=1e-5)
        assert a.mse == pytest.approx(b.mse, rel=1e-5) and a.cosine == pytest.approx(b.cosine, rel=1e-9)


def test_rows_per_run_follow_the_first_row(quantized, monkeypatch):
    model, res = quantized
    pairs = unit_error.unit_outputs(res.plan, res.tensor_map)
    inp = model.proto.graph.input[0].name
    feed = {inp: np.load(EVAL)[inp][:1]}
    f_out = make_session(add_outputs(model.proto, list(pairs))).run(list(pairs), feed)
    q_names = [v[2] for v in pairs.values()]
    q_out = make_session(add_outputs(res.proto, q_names), optimize=False).run(q_names, feed)
    per_row = sum(a.nbytes for a in f_out) + sum(a.nbytes for a in q_out)
    seen = _runs_seen(monkeypatch)
    monkeypatch.setattr(unit_error, "TAP_BUDGET", 5 * per_row + per_row // 2)
    api.analyze(model, res, EVAL, samples=32)  # four batches of ANALYSIS_BATCH = 8 rows
    assert seen == [1, 5, 3, 5, 3, 5, 3, 5, 3]  # one sizing row, then at most 5 per run within each batch of 8


def test_the_sizing_run_is_the_first_run_when_it_has_its_rows(quantized, monkeypatch):
    """Runs of one row: the sizing row's outputs are those of the first run (each model ran it twice); the
    figures equal those of every row run alone, measured here, bit for bit."""
    model, res = quantized
    pairs = {**unit_error.unit_outputs(res.plan, res.tensor_map)}
    f_names, q_names = list(pairs), [pairs[t][2] for t in pairs]
    f_sess = make_session(add_outputs(model.proto, f_names))
    q_sess = make_session(add_outputs(res.proto, q_names), optimize=False)
    inp = model.proto.graph.input[0].name
    rows = np.load(CALIB)[inp][:10]
    accs = {t: unit_error._Acc() for t in f_names}
    for x in rows:
        for t, r, q in zip(f_names, f_sess.run(f_names, {inp: x[None]}), q_sess.run(q_names, {inp: x[None]}),
                           strict=True):
            accs[t].update(r, q)
    seen = _runs_seen(monkeypatch)
    monkeypatch.setattr(unit_error, "TAP_BUDGET", 1)
    segs = unit_error.unit_segments(model.proto, pairs)
    sums = unit_error.accumulate(model.proto, res.proto, pairs, segs, [{inp: rows[:8]}, {inp: rows[8:]}])
    assert seen == [1] * 10  # was 11: the sizing row ran again as the first run
    assert {t: sums[t] for t in f_names} == {t: a.sums() for t, a in accs.items()} and len(f_names) > 3
