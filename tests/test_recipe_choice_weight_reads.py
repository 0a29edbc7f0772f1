"""The recipe choice reads each large float weight out of the model once (io.tensor_bytes.raw_bytes_kept around the
whole choice): with upb every read of raw_data is a copy, and each quantize, session and pass of the choice read
minilm_l6_v2's 90 MB of weights again."""

from __future__ import annotations

from collections import Counter

from workbench.core import api
from workbench.core.io import external, ort_session, tensor_bytes
from workbench.core.io.tensor_bytes import LEAN_BYTES, tensor_nbytes
from workbench.core.tuning.recipe_choice import choose_recipe


def test_each_large_float_weight_is_copied_out_of_the_model_once(corpus, monkeypatch):
    folder = corpus / "minilm_l6_v2"
    model = api.open_model(folder / "model.onnx")
    alive = [t for t in model.proto.graph.initializer if t.HasField("raw_data") and tensor_nbytes(t) > LEAN_BYTES]
    large = {id(t): t.name for t in alive}  # upb hands out the same message object while one is alive
    assert len(large) == 13  # the word embedding and the 12 FFN MatMul weights
    copies: Counter = Counter()
    read = tensor_bytes.raw_bytes

    def counting(t):
        kept = tensor_bytes._KEPT.get(id(t))
        if id(t) in large and (kept is None or kept[1] is None):
            copies[large[id(t)]] += 1
        return read(t)

    for module in (tensor_bytes, external, ort_session):
        monkeypatch.setattr(module, "raw_bytes", counting)
    report = choose_recipe(model, api.make_recipe("cpu-u8s8"), folder / "calib.npz", samples=8)
    assert report.chosen == "compute+mse"
    assert copies and max(copies.values()) == 1, copies.most_common(3)
